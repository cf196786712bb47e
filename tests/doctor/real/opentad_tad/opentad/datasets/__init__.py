from .builder import build_dataset, build_dataloader
from .transforms import *
from .base import *
from .anet import AnetResizeDataset, AnetPaddingDataset, AnetSlidingDataset
from .thumos import ThumosSlidingDataset, ThumosPaddingDataset
from .ego4d import Ego4DSlidingDataset, Ego4DPaddingDataset, Ego4DResizeDataset
from .epic_kitchens import EpicKitchensSlidingDataset, EpicKitchensPaddingDataset

__all__ = [
    "build_dataset",
    "build_dataloader",
    "AnetResizeDataset",
    "AnetPaddingDataset",
    "AnetSlidingDataset",
    "ThumosSlidingDataset",
    "ThumosPaddingDataset",
    "Ego4DSlidingDataset",
    "Ego4DPaddingDataset",
    "Ego4DResizeDataset",
    "EpicKitchensSlidingDataset",
    "EpicKitchensPaddingDataset",
]
