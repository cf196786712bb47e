"""by lyuwenyu
"""

# from .yaml_utils import register, create, load_config, merge_config, merge_dict
from .yaml_utils import *
from .config import BaseConfig
from .yaml_config import YAMLConfig
