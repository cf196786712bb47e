from FlagEmbedding.abc.finetune.embedder import (
    AbsEmbedderModelArguments as EncoderOnlyEmbedderModelArguments,
    AbsEmbedderDataArguments as EncoderOnlyEmbedderDataArguments,
    AbsEmbedderTrainingArguments as EncoderOnlyEmbedderTrainingArguments,
)

from .modeling import BiEncoderOnlyEmbedderModel
from .trainer import EncoderOnlyEmbedderTrainer
from .runner import EncoderOnlyEmbedderRunner

__all__ = [
    'EncoderOnlyEmbedderModelArguments',
    'EncoderOnlyEmbedderDataArguments',
    'EncoderOnlyEmbedderTrainingArguments',
    'BiEncoderOnlyEmbedderModel',
    'EncoderOnlyEmbedderTrainer',
    'EncoderOnlyEmbedderRunner',
]
