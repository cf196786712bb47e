"""Batches: in-memory tensors (``TensorData``, the fast path) and helpers for nested batches.

``TensorData`` batches are gathered by indexing the tensors with the sampler's indices (``gather``),
with no per-sample Python work. Any other map-style data set goes through a ``DataLoader``
(``runtime.sources``); its items are ``(input, target)`` where either may be a tensor or a nested
tuple/list/dict of tensors. Evaluation uses an exact shard per rank (``eval_shard``) so that every
test sample is counted once.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import Dataset


class TensorData(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Inputs and targets of one split, as tensors with the sample in dimension 0."""

    def __init__(self, inputs: torch.Tensor, targets: torch.Tensor) -> None:
        if inputs.shape[0] != targets.shape[0]:
            raise ValueError(f"{inputs.shape[0]} inputs but {targets.shape[0]} targets")
        self.inputs = inputs
        self.targets = targets

    def __len__(self) -> int:
        return int(self.inputs.shape[0])

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.inputs[index], self.targets[index]

    def to(self, device: torch.device, *, channels_last: bool = False) -> TensorData:
        inputs = self.inputs.to(device)
        if channels_last and inputs.dim() == 4:
            inputs = inputs.contiguous(memory_format=torch.channels_last)
        return TensorData(inputs, self.targets.to(device))


def gather(data: TensorData, indices: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One batch: the samples at ``indices`` (a 1-D int64 tensor on the data's device)."""
    return data.inputs.index_select(0, indices), data.targets.index_select(0, indices)


def real_count(total: int, rank: int, world_size: int) -> int:
    """How many of a rank's DistributedSampler indices are real samples, not padding.

    The sampler lays the (shuffled, padded) global list out round-robin: the rank's i-th index is
    global position ``rank + i * world_size``, and positions ``>= total`` are the padding copies.
    So the real ones are the first ``len(range(rank, total, world_size))`` of the rank's list.
    """
    return len(range(rank, total, world_size))


def eval_shard(total: int, rank: int, world_size: int) -> torch.Tensor:
    """Evaluation indices of one rank: every sample on exactly one rank, no padding."""
    return torch.arange(rank, max(total, rank), world_size, dtype=torch.long)


# --- nested batches ------------------------------------------------------------------------------

def to_device(obj: Any, device: torch.device, *, non_blocking: bool = False, channels_last: bool = False) -> Any:
    """Move every tensor of a nested tuple/list/dict to ``device`` (4-D inputs channels_last on request)."""
    if isinstance(obj, torch.Tensor):
        moved = obj.to(device, non_blocking=non_blocking)
        if channels_last and moved.dim() == 4:
            moved = moved.contiguous(memory_format=torch.channels_last)
        return moved
    if isinstance(obj, dict):
        return {k: to_device(v, device, non_blocking=non_blocking, channels_last=channels_last)
                for k, v in obj.items()}
    if isinstance(obj, (tuple, list)):
        return type(obj)(to_device(v, device, non_blocking=non_blocking, channels_last=channels_last)
                         for v in obj)
    return obj


def first_tensor(obj: Any) -> torch.Tensor | None:
    """The first tensor of a nested batch (depth first), or None."""
    if isinstance(obj, torch.Tensor):
        return obj
    values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (tuple, list)) else ()
    for value in values:
        found = first_tensor(value)
        if found is not None:
            return found
    return None


def batch_len(obj: Any) -> int:
    """Samples in a (nested) batch: dimension 0 of its first tensor."""
    tensor = first_tensor(obj)
    if tensor is None or tensor.dim() == 0:
        raise ValueError(f"a batch of {type(obj).__name__} holds no tensor with a batch dimension")
    return int(tensor.shape[0])


def take(obj: Any, count: int) -> Any:
    """The first ``count`` samples of every tensor of a nested batch."""
    if isinstance(obj, torch.Tensor):
        return obj[:count] if obj.dim() > 0 else obj
    if isinstance(obj, dict):
        return {k: take(v, count) for k, v in obj.items()}
    if isinstance(obj, (tuple, list)):
        return type(obj)(take(v, count) for v in obj)
    return obj
