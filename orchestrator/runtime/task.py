"""What a job's ``build(params, ctx)`` gets (``BuildContext``) and returns (``TrainTask``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from orchestrator.config import DATA_DIR_ENV_VAR as DATA_ENV_VAR
from orchestrator.errors import ConfigError
from orchestrator.job import TrainParams
from orchestrator.runtime.data import TensorData

OptimizerFactory = Callable[[Iterable[nn.Parameter], TrainParams], torch.optim.Optimizer]
LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class BuildContext:
    """Where a job finds its data and which rank/device it builds for."""

    data_dir: Path | None
    job_dir: Path
    rank: int
    local_rank: int
    world_size: int
    device: torch.device

    def require_data_dir(self, dataset: str) -> Path:
        if self.data_dir is None:
            raise ConfigError(
                f"{dataset} needs a data directory, and none was given",
                hint=f"pass --data-dir DIR to orch run/submit, set {DATA_ENV_VAR}=DIR, "
                     "or add data_dir=DIR to the job's Python API call",
            )
        return self.data_dir


def default_optimizer(parameters: Iterable[nn.Parameter], params: TrainParams) -> torch.optim.Optimizer:
    """SGD with the job's lr, momentum and weight decay."""
    return torch.optim.SGD(parameters, lr=params.lr, momentum=params.momentum,
                           weight_decay=params.weight_decay)


def default_loss(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(outputs, targets)


@dataclass
class TrainTask:
    """A model and its data. Outputs are class logits (accuracy = argmax == target).

    The data sets are in-memory tensors (``TensorData``): batches are gathered by indexing them
    with the sampler's indices, with no per-sample Python work.
    """

    model: nn.Module
    train_set: TensorData
    test_set: TensorData | None = None
    optimizer: OptimizerFactory | None = None
    loss: LossFn | None = None

    def make_optimizer(self, parameters: Iterable[nn.Parameter],
                       params: TrainParams) -> torch.optim.Optimizer:
        return (self.optimizer or default_optimizer)(parameters, params)

    @property
    def loss_fn(self) -> LossFn:
        return self.loss or default_loss
