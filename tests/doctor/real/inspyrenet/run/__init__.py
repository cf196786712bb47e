from .Train import train
from .Test import test
from .Eval import evaluate