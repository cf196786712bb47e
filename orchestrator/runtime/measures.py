"""Task metrics: functions that return a batch SUM, the running tally of a rank, and the checks.

A metric is ``fn(outputs, targets) -> Tensor``: a 0-d tensor, the SUM over the batch (accuracy: the
number of correct predictions). Summed over ranks and divided by the number of real samples, sums
give exact means over the whole set, uneven shards and the sampler's padding included. Accuracy is
on by default only for classification: integer targets of shape (N,) and outputs of shape (N, C).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from orchestrator.errors import OrchError
from orchestrator.runtime.data import batch_len, take
from orchestrator.runtime.task import MetricFn


class TrainingError(OrchError):
    """The training itself failed (non-finite loss, a bad batch or metric): exit 1 on every rank."""

    exit_code = 1


def accuracy(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Correct predictions in the batch (argmax of the class logits == target)."""
    return (outputs.argmax(dim=1) == targets).sum()


def is_classification(outputs: Any, targets: Any) -> bool:
    """Class logits (N, C) against integer class indices (N,)."""
    return (isinstance(outputs, torch.Tensor) and isinstance(targets, torch.Tensor)
            and outputs.dim() == 2 and targets.dim() == 1 and outputs.shape[0] == targets.shape[0]
            and not targets.is_floating_point() and not targets.is_complex() and targets.dtype != torch.bool)


def task_metrics(custom: Mapping[str, MetricFn] | None, outputs: Any, targets: Any) -> dict[str, MetricFn]:
    """The task's own metrics, or accuracy for a classification task (from one sample batch)."""
    if custom is not None:
        return dict(custom)
    return {"acc": accuracy} if is_classification(outputs, targets) else {}


def check_batch(job: str, where: str, loss: Any, outputs: Any, targets: Any,
                metrics: Mapping[str, MetricFn]) -> None:
    """Before training: the loss is a scalar and every metric returns a scalar (the batch sum)."""
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
        shape = tuple(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__
        raise TrainingError(f"job {job}, {where}: the loss returned {shape}, not a scalar tensor",
                            hint="reduce the loss to one number (e.g. reduction='mean')")
    for name, fn in metrics.items():
        value = fn(outputs, targets)
        if not isinstance(value, torch.Tensor) or value.numel() != 1:
            shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise TrainingError(f"job {job}, {where}: metric {name!r} returned {shape}, not a scalar",
                                hint="a metric returns the SUM over the batch as a 0-d tensor, e.g. "
                                     "(outputs - targets).abs().sum()")


@dataclass
class Tally:
    """Running sums of one rank over the real (not padded) samples; tensors avoid GPU syncs."""

    loss_sum: torch.Tensor
    sums: list[torch.Tensor]
    count: int = 0
    skipped: int = 0  # optimizer steps skipped for a non-finite loss (on_nonfinite=skip)
    names: list[str] = field(default_factory=list)

    @classmethod
    def zeros(cls, device: torch.device, names: list[str]) -> Tally:
        return cls(torch.zeros((), dtype=torch.float64, device=device),
                   [torch.zeros((), dtype=torch.float64, device=device) for _ in names], names=list(names))

    def add(self, loss: torch.Tensor, outputs: Any, targets: Any, n_real: int,
            metrics: Mapping[str, MetricFn]) -> None:
        if n_real <= 0:
            return
        # The batch loss is a mean over the batch; padded samples (only ever in a rank's last
        # batch) share its weight, so they shift the train loss by at most one batch's rounding.
        self.loss_sum += loss.detach().to(torch.float64) * n_real
        if metrics:
            if n_real < batch_len(targets):
                outputs, targets = take(outputs, n_real), take(targets, n_real)
            with torch.no_grad():
                for total, fn in zip(self.sums, metrics.values(), strict=True):
                    total += fn(outputs, targets).detach().reshape(()).to(torch.float64)
        self.count += n_real

    def values(self) -> list[float | torch.Tensor]:
        """What is summed over ranks: loss sum, metric sums, count."""
        return [self.loss_sum, *self.sums, float(self.count)]

    def saved(self) -> dict[str, Any]:
        return {"loss_sum": float(self.loss_sum), "sums": [float(s) for s in self.sums], "count": self.count,
                "skipped": self.skipped}

    def restore(self, saved: Mapping[str, Any]) -> None:
        if len(saved["sums"]) != len(self.sums):
            raise TrainingError(f"the checkpoint stopped mid-epoch with {len(saved['sums'])} metric sum(s); the task "
                                f"now has {len(self.sums)} metric(s) ({', '.join(self.names) or 'none'})",
                                hint="resume with the task's metrics unchanged, or resume from an epoch boundary")
        self.loss_sum += float(saved["loss_sum"])
        for total, value in zip(self.sums, saved["sums"], strict=True):
            total += float(value)
        self.count, self.skipped = int(saved["count"]), int(saved["skipped"])


def means(names: list[str], summed: list[float], prefix: str) -> dict[str, float | None]:
    """``{prefix_loss, prefix_<metric>...}`` from summed ``[loss, *metrics, count, ...]``."""
    count = summed[len(names) + 1]
    out: dict[str, float | None] = {f"{prefix}_loss": summed[0] / count if count else None}
    for i, name in enumerate(names):
        out[f"{prefix}_{name}"] = summed[1 + i] / count if count else None
    return out
