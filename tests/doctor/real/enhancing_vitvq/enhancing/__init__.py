from .utils import general
