from byol_pytorch.byol_pytorch import BYOL, SEM
from byol_pytorch.trainer import BYOLTrainer, MockDataset
