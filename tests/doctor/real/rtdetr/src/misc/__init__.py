
from .logger import *
from .visualizer import *
