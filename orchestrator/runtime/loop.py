"""One training epoch over a rank's batches, and a sharded evaluation.

A step is one micro-batch; every ``grad_accum`` micro-batches make one optimizer step (DDP's
``no_sync`` on the others). Before each optimizer step the ranks vote on stopping (preemption or a
non-finite loss seen on any rank), so all of them stop at the same step, and only at the boundary
of an optimizer step: a checkpoint never holds half an accumulation.
"""

from __future__ import annotations

import contextlib
import math
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from orchestrator.runtime.data import batch_len
from orchestrator.runtime.dist import Dist, StopVote, sum_floats
from orchestrator.runtime.measures import Tally
from orchestrator.runtime.schedule import Schedule
from orchestrator.runtime.task import LossFn, MetricFn

Batch = tuple[Any, Any]
NONFINITE_BASE = 1 << 40  # vote code of a non-finite loss: (BASE - step) * RANKS + (RANKS - 1 - rank)
NONFINITE_RANKS = 1 << 16


@dataclass
class Stepper:
    """Forward, backward and optimizer step of the DDP-wrapped model (AMP and accumulation when set)."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    loss_fn: LossFn
    autocast_dtype: torch.dtype | None = None
    scaler: torch.amp.GradScaler | None = None
    device_type: str = "cpu"
    schedule: Schedule | None = None
    _autocast: Callable[[], contextlib.AbstractContextManager[object]] = field(init=False)

    def __post_init__(self) -> None:
        dtype = self.autocast_dtype
        if dtype is None:
            self._autocast = contextlib.nullcontext
        else:
            self._autocast = lambda: torch.autocast(device_type=self.device_type, dtype=dtype)
        for group in self.optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])

    def autocast(self) -> contextlib.AbstractContextManager[object]:
        return self._autocast()

    def forward_backward(self, inputs: Any, targets: Any, *, window: int, sync: bool) -> tuple[torch.Tensor, Any]:
        """One micro-batch of a window of ``window``; gradients are all-reduced only when ``sync``."""
        no_sync = getattr(self.model, "no_sync", None)
        with contextlib.nullcontext() if sync or no_sync is None else no_sync():
            with self._autocast():
                outputs = self.model(inputs)
                loss = self.loss_fn(outputs, targets)
            scaled = loss / window if window > 1 else loss
            if self.scaler is not None:
                self.scaler.scale(scaled).backward()  # type: ignore[no-untyped-call]
            else:
                scaled.backward()  # type: ignore[no-untyped-call]
        return loss, outputs

    def update(self, opt_step: int) -> None:
        """Optimizer step number ``opt_step`` of the run (the schedule's lr first)."""
        if self.schedule is not None and not self.schedule.constant:
            factor = self.schedule.factor(opt_step)
            for group in self.optimizer.param_groups:
                group["lr"] = group["initial_lr"] * factor
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()

    def step(self, inputs: Any, targets: Any) -> tuple[torch.Tensor, Any]:
        """One whole optimizer step on one batch (no accumulation, no schedule)."""
        self.optimizer.zero_grad(set_to_none=True)
        loss, outputs = self.forward_backward(inputs, targets, window=1, sync=True)
        self.update(0)
        return loss, outputs


def settle_buckets(stepper: Stepper, batch: Batch) -> tuple[torch.Tensor, Any]:
    """One forward and backward of the DDP model whose gradients are thrown away, before training.

    DDP reduces the first backward after its construction through one bucket in parameter order;
    at the next forward it rebuilds the buckets in the order the gradients became ready, for good.
    With 3 or more ranks an all-reduce sums each element in an order that depends on its offset in
    the bucket (which ring chunk it falls into), so the same gradients reduced in the two layouts
    differ in the last bits. A resumed process would reduce its first step in the first-iteration
    layout where the uninterrupted run used the rebuilt one; settling every new DDP model here makes
    every counted step of every process use the rebuilt layout, so resumed runs stay bit-identical.
    The pass leaves the parameters, optimizer state, buffers and RNG states as they were; it returns
    the loss and outputs of ``batch`` (the set-up checks the loss and metrics on them).
    """
    model = stepper.model
    buffers = [b.detach().clone() for b in model.buffers()]
    device = next(iter(model.parameters())).device
    devices = [device] if device.type == "cuda" else []
    inputs, targets = batch
    model.train()
    with torch.random.fork_rng(devices=devices, device_type=device.type):
        with stepper.autocast():
            outputs = model(inputs)
            loss = stepper.loss_fn(outputs, targets)
        if isinstance(loss, torch.Tensor) and loss.dim() == 0:
            loss.backward()  # type: ignore[no-untyped-call]
    stepper.optimizer.zero_grad(set_to_none=True)
    with torch.no_grad():
        for buffer, saved in zip(model.buffers(), buffers, strict=True):
            buffer.copy_(saved)
    return loss, outputs


def steps_per_epoch(per_rank: int, batch_size: int, max_steps: int | None) -> int:
    steps = math.ceil(per_rank / batch_size)
    return min(steps, max_steps) if max_steps is not None else steps


@dataclass
class EpochPlan:
    """The shape of one epoch of one rank."""

    epoch: int  # 0-based
    num_steps: int  # micro-batches
    batch_size: int
    real: int  # how many of the rank's indices are real samples (the rest is the sampler's padding)
    grad_accum: int = 1
    skip_nonfinite: bool = False

    @property
    def opt_steps(self) -> int:
        return math.ceil(self.num_steps / self.grad_accum)


@dataclass
class NonFinite:
    """The first non-finite loss any rank saw: epoch, step (0-based), rank."""

    epoch: int
    step: int
    rank: int


def nonfinite_code(step: int, rank: int) -> int:
    return (NONFINITE_BASE - step) * NONFINITE_RANKS + (NONFINITE_RANKS - 1 - rank)


def decode_nonfinite(code: int, epoch: int) -> NonFinite:
    high, low = divmod(code, NONFINITE_RANKS)
    return NonFinite(epoch=epoch, step=NONFINITE_BASE - high, rank=NONFINITE_RANKS - 1 - low)


class FiniteWatch:
    """Which steps had a non-finite loss, without a GPU synchronisation per step: on CUDA the flag is
    copied to pinned memory asynchronously and read once its event has completed (``poll``)."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.pending: deque[tuple[Any, torch.Tensor, int]] = deque()

    def push(self, loss: torch.Tensor, step: int) -> int | None:
        """``step`` when its loss is known to be non-finite now, else None."""
        bad = ~torch.isfinite(loss.detach())
        if not self.cuda:
            return step if bool(bad) else None
        host = torch.empty((), dtype=torch.bool, pin_memory=True)
        host.copy_(bad, non_blocking=True)
        event = torch.cuda.Event()  # type: ignore[no-untyped-call]
        event.record()
        self.pending.append((event, host, step))
        return self.poll()

    def poll(self, wait: bool = False) -> int | None:
        while self.pending and (wait or self.pending[0][0].query()):
            event, host, step = self.pending.popleft()
            event.synchronize()
            if bool(host):
                self.pending.clear()
                return step
        return None


def train_epoch(stepper: Stepper, batches: Iterator[Batch], plan: EpochPlan, *, start_step: int, vote: StopVote,
                tally: Tally, metrics: Mapping[str, MetricFn], ctx: Dist,
                after_step: Callable[[int], None] | None = None,
                checkpoint: Callable[[int], None] | None = None) -> tuple[int, bool]:
    """Run steps ``start_step .. num_steps - 1`` of this epoch (``start_step`` starts a window).

    Returns ``(next step, stopped)``. A non-finite loss stops every rank at the next vote (and at the
    latest at the end of the epoch; ``vote.problem`` says where), or with ``skip_nonfinite`` drops
    that optimizer step on every rank and counts it. When the vote says a periodic checkpoint is due
    (``vote.take_checkpoint``, the same on every rank), ``checkpoint(step)`` saves before that step,
    at an optimizer-step boundary; the losses not yet checked are settled first, so the weights of a
    non-finite step are never saved (the run stops instead, as it would have at the next vote).
    """
    stepper.model.train()
    accum, bs = plan.grad_accum, plan.batch_size
    watch = FiniteWatch(ctx.device)
    bad_code = 0  # this rank's first non-finite loss, sent with every vote from then on
    window_bad = False
    window = 1
    for step in range(start_step, plan.num_steps):
        if step % accum == 0:
            if vote.should_stop(bad_code):
                return step, True
            if vote.take_checkpoint() and checkpoint is not None:
                if not plan.skip_nonfinite:
                    if not bad_code:
                        bad = watch.poll(wait=True)
                        bad_code = nonfinite_code(bad, ctx.rank) if bad is not None else 0
                    if vote.settle(bad_code):
                        return step, True
                checkpoint(step)
            window = min(accum, plan.num_steps - step)
            window_bad = False
            stepper.optimizer.zero_grad(set_to_none=True)
        last = (step + 1) % accum == 0 or step + 1 == plan.num_steps
        inputs, targets = next(batches)
        loss, outputs = stepper.forward_backward(inputs, targets, window=window, sync=last)
        n_real = min(plan.real - step * bs, batch_len(targets))
        if plan.skip_nonfinite:
            finite = bool(torch.isfinite(loss.detach()))
            window_bad = window_bad or not finite
            if finite:
                tally.add(loss, outputs, targets, n_real, metrics)
        else:
            tally.add(loss, outputs, targets, n_real, metrics)
            if not bad_code:
                bad = watch.push(loss, step)
                bad_code = nonfinite_code(bad, ctx.rank) if bad is not None else 0
        if last:
            if plan.skip_nonfinite and sum_floats([float(window_bad)], ctx)[0] > 0:
                stepper.optimizer.zero_grad(set_to_none=True)
                tally.skipped += 1
            else:
                stepper.update(plan.epoch * plan.opt_steps + step // accum)
        if after_step is not None:
            after_step(step + 1)
    if not plan.skip_nonfinite:
        if not bad_code:
            bad = watch.poll(wait=True)
            bad_code = nonfinite_code(bad, ctx.rank) if bad is not None else 0
        if vote.settle(bad_code):
            return plan.num_steps, True
    return plan.num_steps, False


@torch.no_grad()
def evaluate(model: nn.Module, batches: Iterator[Batch], *, loss_fn: LossFn, metrics: Mapping[str, MetricFn],
             ctx: Dist, autocast_dtype: torch.dtype | None = None) -> list[float]:
    """Sums over the whole set (each rank its exact shard, then one all-reduce):
    ``[loss sum, *metric sums, count]``."""
    model.eval()
    loss_sum = torch.zeros((), dtype=torch.float64, device=ctx.device)
    sums = [torch.zeros((), dtype=torch.float64, device=ctx.device) for _ in metrics]
    count = 0
    for inputs, targets in batches:
        with (torch.autocast(device_type=ctx.device.type, dtype=autocast_dtype) if autocast_dtype
              else contextlib.nullcontext()):
            outputs = model(inputs)
            loss = loss_fn(outputs, targets)
        n = batch_len(targets)
        loss_sum += loss.to(torch.float64) * n
        for total, fn in zip(sums, metrics.values(), strict=True):
            total += fn(outputs, targets).reshape(()).to(torch.float64)
        count += n
    return sum_floats([loss_sum, *sums, float(count)], ctx)
