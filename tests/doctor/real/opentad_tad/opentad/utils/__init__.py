from .misc import set_seed, update_workdir, create_folder, save_config, AverageMeter
from .logger import setup_logger
from .ema import ModelEma
from .checkpoint import save_checkpoint, save_best_checkpoint

__all__ = [
    "set_seed",
    "update_workdir",
    "create_folder",
    "save_config",
    "setup_logger",
    "AverageMeter",
    "ModelEma",
    "save_checkpoint",
    "save_best_checkpoint",
]
