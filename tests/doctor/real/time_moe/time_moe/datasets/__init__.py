#!/usr/bin/env python
# -*- coding:utf-8 _*-
from .binary_dataset import BinaryDataset
from .general_dataset import GeneralDataset
