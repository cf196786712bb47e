from .base_transformer import _AbsTransformerModel
from .transformer_models import BARTModel, UnifiedModel
from .chemformer import Chemformer
