"""Per-step scalars of the shared entrypoint: ``steps.jsonl``, TensorBoard (always) and W&B / MLflow
(opt in), written by rank 0 only.

Every ``log_every`` optimizer steps rank 0 records ``train/loss`` (its mean over the steps since the
last point), ``train/lr``, ``train/samples_per_s`` (all ranks) and ``train/grad_norm`` (the gradients
after DDP's all-reduce, the same on every rank), and after each epoch the epoch's metrics
(``epoch/train_loss``, ``epoch/test_acc``, ...). The x axis is the global optimizer step, derived
from the checkpoint on resume, so an attempt continues where the checkpoint stopped: ``steps.jsonl``
drops the points past it, TensorBoard's writer starts with ``purge_step`` (its reader drops the
orphaned points of the killed attempt), W&B and MLflow log to the job folder's one run.
Costs nothing between points: one integer comparison per step.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

import torch
from torch import nn

from orchestrator.errors import ConfigError
from orchestrator.records.atomic import write_text_atomic
from orchestrator.records.joblayout import ARRAY_FILE
from orchestrator.runtime.metrics import EpochMetrics, dumps
from orchestrator.spec.tracking import STEPS_FILE, TB_DIR, group_id, run_id
from orchestrator.task.trackers import open_sink

log = logging.getLogger(__name__)
POINTS = 200  # the default log_every gives about this many points per run


class Sink(Protocol):
    def scalars(self, values: Mapping[str, float], step: int) -> None: ...

    def close(self, status: str) -> None: ...


def default_log_every(total_opt_steps: int) -> int:
    return max(1, total_opt_steps // POINTS)


def global_step(epoch: int, step: int, num_steps: int, grad_accum: int) -> int:
    """Optimizer steps done after micro-batch ``step`` (a count, 0..num_steps) of 0-based ``epoch``."""
    per_epoch = -(-num_steps // grad_accum)
    return epoch * per_epoch + -(-step // grad_accum)


class StepsLog:
    """``steps.jsonl``: one strict JSON object per logged step; on resume the points past the
    checkpoint are dropped (they are logged again), so steps only ever increase."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file: TextIO | None = None

    def trim(self, after: int) -> None:
        if not self.path.exists():
            return
        kept = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # torn by a kill
            if isinstance(record, dict) and isinstance(record.get("step"), int) and record["step"] <= after:
                kept.append(line + "\n")
        write_text_atomic(self.path, "".join(kept))

    def scalars(self, values: Mapping[str, float], step: int) -> None:
        if self.file is None:
            self.file = self.path.open("a", encoding="utf-8")
        self.file.write(dumps({"step": step, "time": time.time(), **values}) + "\n")
        self.file.flush()  # whole lines in the file (orch plot reads it while the job runs)

    def close(self, status: str) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


class TensorBoardSink:
    def __init__(self, log_dir: Path, purge_step: int | None) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            raise ConfigError("TensorBoard logging needs the tensorboard package, which is not installed",
                              hint="pip install tensorboard (a dependency of orch: reinstall orch)") from None
        from tensorboard.compat.proto.summary_pb2 import Summary

        self.writer = SummaryWriter(log_dir=str(log_dir), purge_step=purge_step, flush_secs=10, max_queue=1000)
        self.files = self.writer._get_file_writer()  # type: ignore[no-untyped-call]
        self.summary = Summary

    def scalars(self, values: Mapping[str, float], step: int) -> None:
        # one event with every scalar of the step (add_scalar would make one event per scalar, at 4x the cost)
        summary = self.summary(value=[self.summary.Value(tag=k, simple_value=v) for k, v in values.items()])
        self.files.add_summary(summary, global_step=step)

    def close(self, status: str) -> None:
        self.writer.close()


def grad_norm(model: nn.Module) -> float | None:
    """The L2 norm of all gradients (None when there are none: a skipped step)."""
    grads = [p.grad.detach() for p in model.parameters() if p.grad is not None]
    if not grads:
        return None
    # the per-tensor norms in one fused call (what clip_grad_norm_ does), then their norm: no copy of the grads
    return float(torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads))))


@dataclass
class StepTracker:
    """Rank 0's per-step scalars; other ranks get one with no sinks (every call returns at once)."""

    sinks: list[Sink]
    every: int
    samples_per_step: int  # batch x grad_accum x world size
    clock: Callable[[], float] = time.perf_counter
    _next: int = 0
    _last_step: int = 0
    _last_time: float = 0.0
    _last_sum: float = 0.0
    _last_count: int = 0
    _closed: bool = field(default=False)

    @property
    def active(self) -> bool:
        return bool(self.sinks)

    def begin(self, step: int, loss_sum: float, count: int) -> None:
        """At the start of an epoch (global step ``step``, the tally's sums): the baseline of the next point."""
        self._last_step, self._last_time = step, self.clock()
        self._last_sum, self._last_count = loss_sum, count
        self._next = (step // self.every + 1) * self.every

    def due(self, step: int) -> bool:
        return bool(self.sinks) and step >= self._next

    def point(self, step: int, *, loss_sum: Callable[[], float], count: int, lr: float,
              model: nn.Module) -> None:
        """Log global step ``step`` (call when :meth:`due`)."""
        now = self.clock()
        total = loss_sum()
        values: dict[str, float] = {"train/lr": lr}
        if count > self._last_count:
            values["train/loss"] = (total - self._last_sum) / (count - self._last_count)
        if now > self._last_time and step > self._last_step:
            values["train/samples_per_s"] = (step - self._last_step) * self.samples_per_step / (now - self._last_time)
        norm = grad_norm(model)
        if norm is not None:
            values["train/grad_norm"] = norm
        self._emit({k: v for k, v in values.items() if math.isfinite(v)}, step)
        self._last_step, self._last_time, self._last_sum, self._last_count = step, now, total, count
        self._next = (step // self.every + 1) * self.every

    def epoch(self, metrics: EpochMetrics, step: int) -> None:
        values = {f"epoch/{k}": v for k, v in metrics.values.items() if v is not None and math.isfinite(v)}
        values["epoch/samples_per_s"] = metrics.samples_per_s
        self._emit(values, step)

    def _emit(self, values: Mapping[str, float], step: int) -> None:
        for sink in self.sinks:
            try:
                sink.scalars(values, step)
            except Exception as exc:  # a tracker's hiccup (network, disk) never stops training
                log.warning("%s could not log step %d: %s", type(sink).__name__, step, exc)

    def close(self, status: str) -> None:
        if self._closed:
            return
        self._closed = True
        for sink in self.sinks:
            try:
                sink.close(status)
            except Exception as exc:
                log.warning("%s could not close: %s", type(sink).__name__, exc)


def open_tracker(job_dir: Path, *, is_main: bool, tracking: Sequence[str], params: Mapping[str, Any],
                 log_every: int | None, total_opt_steps: int, samples_per_step: int, resumed_at: int | None,
                 job_name: str) -> StepTracker:
    """The tracker of this rank: rank 0 writes ``steps.jsonl``, ``tb/`` and the opted-in trackers."""
    every = log_every or default_log_every(total_opt_steps)
    if not is_main:
        return StepTracker([], every, samples_per_step)
    steps = StepsLog(job_dir / STEPS_FILE)
    start = resumed_at or 0
    steps.trim(start)
    tb = job_dir / TB_DIR
    # an earlier attempt's points past the checkpoint are orphans: TensorBoard's reader drops them
    purge = start + 1 if tb.is_dir() and any(tb.iterdir()) else None
    sinks: list[Sink] = [steps, TensorBoardSink(tb, purge)]
    rid = run_id(job_dir)
    group = group_id(job_dir, (job_dir.parent / ARRAY_FILE).is_file())
    os.environ.setdefault("ORCH_RUN_ID", rid)
    for name in tracking:
        sinks.append(open_sink(name, job_dir=job_dir, run_id=rid, group=group, job_name=job_name, config=params))
    return StepTracker(sinks, every, samples_per_step)
