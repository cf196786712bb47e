from .checkpoint import CheckPoint
