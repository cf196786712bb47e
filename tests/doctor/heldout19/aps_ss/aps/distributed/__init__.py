from .backend import *
