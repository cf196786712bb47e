from .encoder import EncoderModel, EncoderOutput
from .dense import DenseModel, MultiModalDenseModel
from .unicoil import UniCoilModel
from .splade import SpladeModel, SpladeModelForCausalLM
