"""Transducer/CTC/CRF/LM training/inference tool
"""

from . import ctc
from . import lm
from . import rnnt
from . import shared
from . import utils
