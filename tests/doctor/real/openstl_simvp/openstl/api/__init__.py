# Copyright (c) CAIRI AI Lab. All rights reserved

from .exp import BaseExperiment

__all__ = [
    'BaseExperiment',
]