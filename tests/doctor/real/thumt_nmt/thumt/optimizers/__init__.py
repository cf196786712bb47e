from thumt.optimizers.optimizers import AdamOptimizer
from thumt.optimizers.optimizers import AdadeltaOptimizer
from thumt.optimizers.optimizers import SGDOptimizer
from thumt.optimizers.optimizers import MultiStepOptimizer
from thumt.optimizers.optimizers import LossScalingOptimizer
from thumt.optimizers.schedules import LinearWarmupRsqrtDecay
from thumt.optimizers.schedules import PiecewiseConstantDecay
from thumt.optimizers.schedules import LinearExponentialDecay
from thumt.optimizers.clipping import (
    adaptive_clipper, global_norm_clipper, value_clipper)
