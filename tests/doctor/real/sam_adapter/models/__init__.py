from .models import register, make
from . import sam

