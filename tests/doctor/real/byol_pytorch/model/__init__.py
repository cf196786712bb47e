#-*- coding:utf-8 -*-
from .byol_model import BYOLModel