from .train_b import WurstCore as WurstCoreB
from .train_c import WurstCore as WurstCoreC
from .train_c_controlnet import WurstCore as ControlNetCore
from .train_c_lora import WurstCore as LoraCore