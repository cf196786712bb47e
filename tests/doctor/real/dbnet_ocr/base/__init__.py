from .base_trainer import BaseTrainer
from .base_dataset import BaseDataSet