from .train_engine import train_one_epoch, val_one_epoch
from .test_engine import eval_one_epoch
from .optimizer import build_optimizer
from .scheduler import build_scheduler

__all__ = ["train_one_epoch", "val_one_epoch", "eval_one_epoch", "build_optimizer", "build_scheduler"]
