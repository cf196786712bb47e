"""Per-epoch metrics: one line printed by rank 0, one JSON object per epoch in ``metrics.jsonl``,
and ``result.json`` at the end. No torch here: the numbers arrive already reduced over ranks. A full disk
or quota under any of these writes is one orch error naming the file (``spec.numbers.writing``)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.records.atomic import write_text_atomic
from orchestrator.spec.numbers import writing

PERCENT_METRICS = ("acc",)  # shown as percentages in the epoch line


@dataclass(frozen=True)
class EpochMetrics:
    """One epoch, reduced over ranks. ``values`` holds ``train_loss``, ``train_<metric>``, ``test_loss``
    and ``test_<metric>`` for the task's metrics (``names``); ``None`` where there is no number."""

    epoch: int  # 1-based
    epochs: int
    values: dict[str, float | None]
    names: tuple[str, ...]  # the task's metric names besides the loss
    samples_per_s: float  # training samples (all ranks, padding excluded) per second of training
    seconds: float  # wall time of the epoch: training and evaluation
    world_size: int
    train_samples: int
    steps: int  # training steps (micro-batches) of this epoch per rank
    skipped_steps: int = 0  # optimizer steps skipped for a non-finite loss
    global_step: int | None = None  # optimizer steps of the run at the end of the epoch (steps.jsonl's x axis)

    def as_dict(self) -> dict[str, Any]:
        extra = {"global_step": self.global_step} if self.global_step is not None else {}
        return {"epoch": self.epoch, "epochs": self.epochs, **self.values, "samples_per_s": self.samples_per_s,
                "seconds": self.seconds, "world_size": self.world_size, "train_samples": self.train_samples,
                "steps": self.steps, "skipped_steps": self.skipped_steps, "metrics": list(self.names), **extra}

    def _part(self, prefix: str) -> str:
        loss = self.values.get(f"{prefix}_loss")
        text = f"{prefix} loss {_number(loss, '.4f')}"
        for name in self.names:
            value = self.values.get(f"{prefix}_{name}")
            if name in PERCENT_METRICS:
                text += f" {name} {value * 100:6.2f}%" if value is not None else f" {name} -"
            else:
                text += f" {name} {_number(value, '.4g')}"
        return text

    def line(self) -> str:
        width = len(str(self.epochs))
        text = f"epoch {self.epoch:>{width}}/{self.epochs}  {self._part('train')}"
        if self.values.get("test_loss") is not None:
            text += f"  {self._part('test')}"
        if self.skipped_steps:
            text += f"  {self.skipped_steps} step(s) skipped (non-finite loss)"
        return text + f"  {self.samples_per_s:,.0f} samples/s  {self.seconds:.1f} s"


def epoch_problem(m: EpochMetrics, job: str, opt_steps: int) -> tuple[str, str] | None:
    """Why epoch ``m`` cannot count as trained, with the fix; None when it can.

    A run whose numbers are not numbers is a failure, never a success: a non-finite value of any
    metric (train or test: a loss that is finite in training but NaN in evaluation too), an epoch
    whose every optimizer step was skipped for a non-finite loss (``on_nonfinite=skip``), and an epoch
    that trained on no sample at all.
    """
    where = f"job {job}, epoch {m.epoch}"
    bad = [k for k, v in m.values.items() if v is not None and not math.isfinite(v)]
    if bad:
        return (f"{where}: non-finite {', '.join(f'{k}={m.values[k]}' for k in bad)}; the run is not counted as "
                "completed, no checkpoint was written for the epoch",
                "lower lr, check the data, the model's evaluation path and the metrics (a metric returns the "
                "batch SUM; a division by zero gives NaN); resume continues from the last checkpoint")
    if opt_steps and m.skipped_steps >= opt_steps:
        return (f"{where}: every optimizer step ({m.skipped_steps} of {opt_steps}) was skipped for a non-finite "
                "loss (on_nonfinite=skip): nothing was trained",
                "lower lr, check the data and the loss; on_nonfinite=skip is for rare bad batches, not a loss "
                "that is never finite")
    if m.train_samples <= 0:
        return (f"{where}: trained on no sample (train_samples=0)",
                "check train_set and max_steps_per_epoch: the epoch must see at least one real sample")
    return None


def _number(value: float | None, spec: str) -> str:
    return format(value, spec) if value is not None else "-"


def strict(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None: JSON without NaN or Infinity."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v) for v in value]
    return value


def dumps(value: Any, **kwargs: Any) -> str:
    """Strict JSON (``null`` for NaN and infinities, never a bare ``NaN``)."""
    return json.dumps(strict(value), allow_nan=False, **kwargs)


class MetricsLog:
    """``metrics.jsonl``: exactly one object per completed epoch, also across resumes."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        entries = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a line torn by a kill mid-write; the epoch is rerun and logged again
            if isinstance(entry, dict) and isinstance(entry.get("epoch"), int):
                entries.append(entry)
        return entries

    def trim(self, completed_epochs: int) -> None:
        """Drop entries after the resumed checkpoint (those epochs run again and log again)."""
        if self.path.exists():
            kept = [e for e in self.read() if e["epoch"] <= completed_epochs]
            with writing(self.path):
                write_text_atomic(self.path, "".join(dumps(e) + "\n" for e in kept))

    def append(self, metrics: EpochMetrics) -> None:
        """One whole line, flushed (readers see it at once) but not fsynced: rank 0 writes it while the
        other ranks may already wait in a collective under the short training timeout, and an fsync on a
        busy network file system can take longer than that. :meth:`sync` makes it durable, inside the
        checkpoint's patient window, before the checkpoint that covers the epoch is written."""
        with writing(self.path), self.path.open("a", encoding="utf-8") as fh:
            fh.write(dumps(metrics.as_dict()) + "\n")
            fh.flush()

    def sync(self) -> None:
        """fsync the log (when it exists): its lines are on disk before a checkpoint claims their epochs."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            with writing(self.path):
                os.fsync(fd)
        finally:
            os.close(fd)


def write_json_atomic(path: Path, data: Mapping[str, Any], *, fsync: bool = True) -> None:
    with writing(path):
        write_text_atomic(path, dumps(dict(data), indent=2, sort_keys=True) + "\n", fsync=fsync)
