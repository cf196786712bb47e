# coding=utf-8
# Copyright 2017-Present The THUMT Authors

from thumt.data.dataset import Dataset, ElementSpec, MapFunc, TextLineDataset
from thumt.data.pipeline import MTPipeline
from thumt.data.vocab import Vocabulary
