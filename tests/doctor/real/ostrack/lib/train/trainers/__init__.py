from .base_trainer import BaseTrainer
from .ltr_trainer import LTRTrainer
