# Copyright (c) CAIRI AI Lab. All rights reserved

from .dataloader_human import HumanDataset
from .dataloader_kitticaltech import KittiCaltechDataset
from .dataloader_kth import KTHDataset
from .dataloader_moving_mnist import MovingMNIST
from .dataloader_taxibj import TaxibjDataset
from .dataloader_weather import WeatherBenchDataset
from .dataloader import load_data
from .dataset_constant import dataset_parameters
from .pipelines import *
from .utils import create_loader
from .base_data import BaseDataModule

__all__ = [
    'KittiCaltechDataset', 'HumanDataset', 'KTHDataset', 'MovingMNIST', 'TaxibjDataset',
    'WeatherBenchDataset',
    'load_data', 'dataset_parameters', 'create_loader', 'BaseDataModule'
]