from .detector import GroupFreeDetector
from .loss_helper import get_loss
from .ap_helper import APCalculator, parse_predictions, parse_groundtruths