from .losses import *
# from .helper_functions import *
# from .process_dataset import image_preprocess