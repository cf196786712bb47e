__version__ = "0.0.5a1"

# Public imports
from genslm.dataset import SequenceDataset  # noqa
from genslm.inference import GenSLM  # noqa
