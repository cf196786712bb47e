from .distributed_sampler import TrainingSampler, InferenceSampler
