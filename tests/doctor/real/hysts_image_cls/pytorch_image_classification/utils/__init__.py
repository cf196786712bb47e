from .dist import get_rank
from .diff_config import find_config_diff
from .env_info import get_env_info
from .logger import create_logger
from .metric_logger import AverageMeter
from .metrics import compute_accuracy
from .op_count import count_op
from .tensorboard import DummyWriter, create_tensorboard_writer
from .utils import save_config, set_seed, setup_cudnn
