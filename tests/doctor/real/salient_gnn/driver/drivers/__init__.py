from .base import BaseDriver
from .ddp import DDPDriver
from .singleproc import SingleProcDriver
