from .base_strategy import TrainingStrategy
from .ddp import DDPStrategy
from .fsdp import FSDPStrategy
