from .color_util import bgr2ycbcr, rgb2ycbcr, rgb2ycbcr_pt, ycbcr2bgr, ycbcr2rgb
from .diffjpeg import DiffJPEG
from .file_client import FileClient
from .img_process_util import USMSharp, usm_sharp
from .img_util import crop_border, imfrombytes, img2tensor, imwrite, tensor2img
from .logger import AvgTimer, MessageLogger, get_env_info, get_root_logger, init_tb_logger, init_wandb_logger
from .misc import check_resume, get_time_str, make_exp_dirs, mkdir_and_rename, scandir, set_random_seed, sizeof_fmt
from .options import yaml_load

__all__ = [
    #  color_util.py
    'bgr2ycbcr',
    'rgb2ycbcr',
    'rgb2ycbcr_pt',
    'ycbcr2bgr',
    'ycbcr2rgb',
    # file_client.py
    'FileClient',
    # img_util.py
    'img2tensor',
    'tensor2img',
    'imfrombytes',
    'imwrite',
    'crop_border',
    # logger.py
    'MessageLogger',
    'AvgTimer',
    'init_tb_logger',
    'init_wandb_logger',
    'get_root_logger',
    'get_env_info',
    # misc.py
    'set_random_seed',
    'get_time_str',
    'mkdir_and_rename',
    'make_exp_dirs',
    'scandir',
    'check_resume',
    'sizeof_fmt',
    # diffjpeg
    'DiffJPEG',
    # img_process_util
    'USMSharp',
    'usm_sharp',
    # options
    'yaml_load'
]
