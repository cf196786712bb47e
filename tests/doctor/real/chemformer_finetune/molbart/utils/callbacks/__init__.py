from molbart.utils.callbacks.callbacks import (
    LearningRateMonitor,
    ScoreCallback,
    ModelCheckpoint,
    OptLRMonitor,
    StepCheckpoint,
    ValidationScoreCallback,
)
from molbart.utils.callbacks.callback_collection import CallbackCollection
