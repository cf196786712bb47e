from .model import SpeechTokenizer
from .trainer import SpeechTokenizerTrainer

__version__ = '1.0.0'