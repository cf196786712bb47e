# Copyright 2022 Tsinghua University
# Apache 2.0.
# Author: Huahuan Zheng (maxwellzh@outlook.com)

"""Common files and variables for different trainer.
"""

from . import tokenizer
from . import scheduler
from . import manager
from . import layer
from . import encoder
from . import decoder
from . import data
from . import coreutils
from .specaug import SpecAug
from .manager import Manager
