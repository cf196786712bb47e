from .datasets import build_train_dataset
from .datasets import (FlyingChairs,
                       FlyingThings3D,
                       MpiSintel,
                       KITTI,
                       HD1K,
                       )
