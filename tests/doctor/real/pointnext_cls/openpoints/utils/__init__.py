from .random import set_random_seed
from .config import EasyConfig, print_args
from .logger import setup_logger_dist, generate_exp_directory, resume_exp_directory
from .wandb import Wandb
from .metrics import AverageMeter, ConfusionMatrix, get_mious
from .ckpt_util import resume_model, resume_optimizer, resume_checkpoint, save_checkpoint, load_checkpoint, \
    get_missing_parameters_message, get_unexpected_parameters_message, cal_model_parm_nums, load_checkpoint_inv
from .dist_utils import reduce_tensor, gather_tensor, find_free_port
