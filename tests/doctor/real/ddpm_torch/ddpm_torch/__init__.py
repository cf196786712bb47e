from .datasets import get_dataloader, DATASET_DICT, DATASET_INFO
from .diffusion import GaussianDiffusion, get_beta_schedule
from .metrics import Evaluator
from .models import UNet
from .utils import seed_all, get_param, ConfigDict
from .utils.train import Trainer, DummyScheduler, ModelWrapper

__all__ = [
    "get_dataloader",
    "DATASET_DICT",
    "DATASET_INFO",
    "seed_all",
    "get_param",
    "ConfigDict",
    "Trainer",
    "DummyScheduler",
    "ModelWrapper",
    "Evaluator",
    "GaussianDiffusion",
    "get_beta_schedule",
    "UNet"
]
