# -*- coding: utf-8 -*-
# @Time    : 2019/8/23 21:58
# @Author  : zhoujun
from .util import *
from .metrics import *
from .schedulers import *
from .cal_recall.script import  cal_recall_precison_f1
from .ocr_metric import get_metric