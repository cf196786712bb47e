from .materialize import get_train_strategy
from .metrics import Metrics
