from .config import get_default_config, update_config
from .collators import create_collator
from .transforms import create_transform
from .datasets import create_dataset, create_dataloader
from .models import apply_data_parallel_wrapper, create_model
from .losses import create_loss
from .optim import create_optimizer
from .scheduler import create_scheduler

import pytorch_image_classification.utils
