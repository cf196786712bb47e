"""One training epoch over a rank's sampler indices, and a sharded evaluation."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from orchestrator.runtime.data import TensorData, gather
from orchestrator.runtime.dist import Dist, StopVote, sum_floats
from orchestrator.runtime.task import LossFn


@dataclass
class Tally:
    """Running sums of one rank over the real (not padded) samples seen; tensors avoid GPU syncs."""

    loss_sum: torch.Tensor
    correct: torch.Tensor
    count: int = 0

    @classmethod
    def zeros(cls, device: torch.device) -> Tally:
        return cls(torch.zeros((), dtype=torch.float64, device=device),
                   torch.zeros((), dtype=torch.int64, device=device))

    def add(self, loss: torch.Tensor, outputs: torch.Tensor, targets: torch.Tensor, n_real: int) -> None:
        if n_real <= 0:
            return
        # The batch loss is a mean over the batch; padded samples (only ever in a rank's last
        # batch) share its weight, so they shift the train loss by at most one batch's rounding.
        self.loss_sum += loss.detach().to(torch.float64) * n_real
        self.correct += (outputs[:n_real].argmax(dim=1) == targets[:n_real]).sum()
        self.count += n_real


@dataclass
class Stepper:
    """Forward, backward and optimizer step of the DDP-wrapped model (AMP when configured)."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    loss_fn: LossFn
    autocast_dtype: torch.dtype | None = None
    scaler: torch.amp.GradScaler | None = None
    device_type: str = "cpu"
    _autocast: Callable[[], contextlib.AbstractContextManager[object]] = field(init=False)

    def __post_init__(self) -> None:
        dtype = self.autocast_dtype
        if dtype is None:
            self._autocast = contextlib.nullcontext
        else:
            self._autocast = lambda: torch.autocast(device_type=self.device_type, dtype=dtype)

    def autocast(self) -> contextlib.AbstractContextManager[object]:
        return self._autocast()

    def step(self, inputs: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.optimizer.zero_grad(set_to_none=True)
        with self._autocast():
            outputs = self.model(inputs)
            loss = self.loss_fn(outputs, targets)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()  # type: ignore[no-untyped-call]
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            loss.backward()  # type: ignore[no-untyped-call]
            self.optimizer.step()
        return loss, outputs


def settle_buckets(stepper: Stepper, data: TensorData, batch_size: int) -> None:
    """One forward and backward of the DDP model whose gradients are thrown away, before training.

    DDP reduces the first backward after its construction through one bucket in parameter order;
    at the next forward it rebuilds the buckets in the order the gradients became ready, for good.
    With 3 or more ranks an all-reduce sums each element in an order that depends on its offset in
    the bucket (which ring chunk it falls into), so the same gradients reduced in the two layouts
    differ in the last bits. A resumed process would reduce its first step in the first-iteration
    layout where the uninterrupted run used the rebuilt one; settling every new DDP model here makes
    every counted step of every process use the rebuilt layout, so resumed runs stay bit-identical.
    The pass leaves the parameters, optimizer state, buffers and RNG states as they were.
    """
    count = min(batch_size, len(data))
    if count == 0:
        return
    model = stepper.model
    buffers = [b.detach().clone() for b in model.buffers()]
    devices = [data.inputs.device] if data.inputs.device.type == "cuda" else []
    inputs, targets = gather(data, torch.arange(count, device=data.inputs.device))
    model.train()
    with torch.random.fork_rng(devices=devices, device_type=data.inputs.device.type):
        with stepper.autocast():
            loss = stepper.loss_fn(model(inputs), targets)
        loss.backward()  # type: ignore[no-untyped-call]
    stepper.optimizer.zero_grad(set_to_none=True)
    with torch.no_grad():
        for buffer, saved in zip(model.buffers(), buffers, strict=True):
            buffer.copy_(saved)


def steps_per_epoch(per_rank: int, batch_size: int, max_steps: int | None) -> int:
    steps = math.ceil(per_rank / batch_size)
    return min(steps, max_steps) if max_steps is not None else steps


def train_epoch(stepper: Stepper, data: TensorData, order: torch.Tensor, *, real: int, batch_size: int,
                start_step: int, num_steps: int, vote: StopVote, tally: Tally,
                after_step: Callable[[int], None] | None = None) -> tuple[int, bool]:
    """Run steps ``start_step .. num_steps - 1`` of this epoch.

    ``order`` is this rank's share of the epoch (the sampler's indices, on the data's device),
    ``real`` how many of them are real samples (the rest is the sampler's padding). Before each
    step every rank votes on stopping; returns ``(next step, stopped)``.
    """
    stepper.model.train()
    for step in range(start_step, num_steps):
        if vote.should_stop():
            return step, True
        begin = step * batch_size
        indices = order[begin:begin + batch_size]
        inputs, targets = gather(data, indices)
        loss, outputs = stepper.step(inputs, targets)
        tally.add(loss, outputs, targets, min(real - begin, int(indices.shape[0])))
        if after_step is not None:
            after_step(step)
    return num_steps, False


@torch.no_grad()
def evaluate(model: nn.Module, data: TensorData, shard: torch.Tensor, *, batch_size: int, loss_fn: LossFn,
             ctx: Dist, autocast_dtype: torch.dtype | None = None) -> tuple[float, float, int]:
    """Loss and accuracy over the whole set: each rank its exact shard, then one all-reduce."""
    model.eval()
    loss_sum = torch.zeros((), dtype=torch.float64, device=ctx.device)
    correct = torch.zeros((), dtype=torch.int64, device=ctx.device)
    for begin in range(0, int(shard.shape[0]), batch_size):
        inputs, targets = gather(data, shard[begin:begin + batch_size])
        with (torch.autocast(device_type=ctx.device.type, dtype=autocast_dtype) if autocast_dtype
              else contextlib.nullcontext()):
            outputs = model(inputs)
            loss = loss_fn(outputs, targets)
        loss_sum += loss.to(torch.float64) * int(targets.shape[0])
        correct += (outputs.argmax(dim=1) == targets).sum()
    total_loss, total_correct, total = sum_floats([loss_sum, correct, float(shard.shape[0])], ctx)
    return total_loss / max(total, 1.0), total_correct / max(total, 1.0), int(total)
