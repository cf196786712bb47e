from .lr_scheduler import get_scheduler
from .logger import setup_logger