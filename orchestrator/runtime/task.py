"""What a job's ``build(params, ctx)`` gets (``BuildContext``) and returns (``TrainTask``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from orchestrator.errors import ConfigError
from orchestrator.spec.datadir import DATA_DIR_ENV_VAR
from orchestrator.spec.job import TrainParams

OptimizerFactory = Callable[[Iterable[nn.Parameter], TrainParams], torch.optim.Optimizer]
LossFn = Callable[[Any, Any], torch.Tensor]
MetricFn = Callable[[Any, Any], torch.Tensor]


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
                hint=f"pass --data-dir DIR to orch run/submit, set {DATA_DIR_ENV_VAR}=DIR, "
                     "or add data_dir=DIR to the job's Python API call",
            )
        return self.data_dir


def default_optimizer(parameters: Iterable[nn.Parameter], params: TrainParams) -> torch.optim.Optimizer:
    """SGD with the job's lr, momentum and weight decay."""
    return torch.optim.SGD(parameters, lr=params.lr, momentum=params.momentum,
                           weight_decay=params.weight_decay)


def default_loss(outputs: Any, targets: Any) -> torch.Tensor:
    return nn.functional.cross_entropy(outputs, targets)


@dataclass
class TrainTask:
    """A model, its data sets, its loss and its metrics.

    ``train_set``/``test_set``: a ``TensorData`` (in-memory tensors, moved to the device once: the
    fast path) or any map-style data set (``__len__`` and ``__getitem__``, e.g. a
    ``torch.utils.data.Dataset``) whose items are ``(input, target)``, either a tensor or a nested
    tuple/dict of tensors; such a set goes through a DataLoader with ``num_workers`` workers and never
    moves to the device as a whole.

    ``loss(outputs, targets)`` returns the batch MEAN (default: cross entropy). ``metrics`` maps a name
    to ``fn(outputs, targets)`` returning the batch SUM as a 0-d tensor (summed over all ranks and
    divided by the sample count: exact means). ``None`` (the default) means accuracy (``acc``) for a
    classification task (class logits (N, C) against integer targets (N,)) and nothing otherwise;
    ``{}`` means no metric besides the loss.
    """

    model: nn.Module
    train_set: Any
    test_set: Any | None = None
    optimizer: OptimizerFactory | None = None
    loss: LossFn | None = None
    metrics: Mapping[str, MetricFn] | None = None

    def make_optimizer(self, parameters: Iterable[nn.Parameter],
                       params: TrainParams) -> torch.optim.Optimizer:
        return (self.optimizer or default_optimizer)(parameters, params)

    @property
    def loss_fn(self) -> LossFn:
        return self.loss or default_loss
