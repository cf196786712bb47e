from .datasets import create_dataset
from .dataloader import create_dataloader
