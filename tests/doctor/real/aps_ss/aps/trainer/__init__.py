from .base import ParameterAverager
