from .default import _C as config
from .default import update_config
