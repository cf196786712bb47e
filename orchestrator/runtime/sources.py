"""Where a rank's batches come from, chosen per data set: in-memory tensors or a DataLoader.

- ``TensorSource`` (a ``TensorData``): the whole set lives on the device once; a batch is one
  ``index_select`` with the sampler's indices. This is the MNIST fast path.
- ``LoaderSource`` (any other map-style data set: ``__len__`` and ``__getitem__``): a ``DataLoader``
  over this rank's sampler indices, with worker processes, pinned memory and ``non_blocking`` copies
  on GPU, persistent workers, and a seed per batch. The set itself never moves to the device.

Both take the epoch's order (the ``DistributedSampler``'s indices of this rank) and the step to start
from, so a resumed epoch continues at its step with the very batches of an uninterrupted run. A
``LoaderSource`` seeds torch, ``random`` and numpy before each batch from (seed, epoch, rank, step):
random augmentation in the data set is the same for any number of workers and across a resume.
"""

from __future__ import annotations

import logging
import random
import signal
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, Sampler, default_collate, get_worker_info

from orchestrator.errors import ConfigError
from orchestrator.runtime.data import TensorData, gather, to_device

log = logging.getLogger(__name__)

Batch = tuple[Any, Any]
_MASK = (1 << 63) - 1


def batch_seed(seed: int, epoch: int, rank: int, step: int) -> int:
    """A 63-bit seed per (seed, epoch, rank, step): splitmix64 over the four numbers."""
    value = 0
    for part in (seed, epoch, rank, step):
        value = (value ^ (part & _MASK)) + 0x9E3779B97F4A7C15
        value &= (1 << 64) - 1
        value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & ((1 << 64) - 1)
        value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & ((1 << 64) - 1)
        value ^= value >> 31
    return value & _MASK


class TensorSource:
    """The in-memory fast path: the set on the device, batches gathered by index."""

    def __init__(self, data: TensorData, device: torch.device, *, batch_size: int, eval_batch_size: int,
                 channels_last: bool = False) -> None:
        self.data = data.to(device, channels_last=channels_last)
        self.device = device
        self.batch_size = batch_size
        self.eval_batch_size = eval_batch_size

    def __len__(self) -> int:
        return len(self.data)

    def batches(self, order: Sequence[int], *, epoch: int, start_step: int) -> Iterator[Batch]:
        indices = torch.as_tensor(list(order[start_step * self.batch_size:]), dtype=torch.long, device=self.device)
        for begin in range(0, int(indices.shape[0]), self.batch_size):
            yield gather(self.data, indices[begin:begin + self.batch_size])

    def eval_batches(self, indices: Sequence[int]) -> Iterator[Batch]:
        shard = torch.as_tensor(list(indices), dtype=torch.long, device=self.device)
        for begin in range(0, int(shard.shape[0]), self.eval_batch_size):
            yield gather(self.data, shard[begin:begin + self.eval_batch_size])


class _Keys(Sampler[tuple[int, int]]):
    """The keys of the next pass, set before each ``iter(loader)`` (iterated in the main process)."""

    def __init__(self) -> None:
        self.keys: list[tuple[int, int]] = []

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter(self.keys)

    def __len__(self) -> int:
        return len(self.keys)


class _Seeded(Dataset[Any]):
    """Fetches a batch of ``(index, seed)`` keys, seeding the RNGs with the batch's seed first.

    In a worker process the seeds are set as they are; in the main process (``num_workers=0``) the
    RNG states are restored afterwards, so the training RNG (dropout) is not disturbed."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, key: tuple[int, int]) -> Any:
        return self.__getitems__([key])[0]

    def __getitems__(self, keys: list[tuple[int, int]]) -> list[Any]:
        seed = keys[0][1]
        if get_worker_info() is not None:
            _seed_all(seed)
            return self._fetch(keys)
        saved = (torch.get_rng_state(), random.getstate(), np.random.get_state())
        try:
            _seed_all(seed)
            return self._fetch(keys)
        finally:
            torch.set_rng_state(saved[0])
            random.setstate(saved[1])
            np.random.set_state(saved[2])

    def _fetch(self, keys: list[tuple[int, int]]) -> list[Any]:
        return [self.dataset[index] for index, _ in keys]


def _seed_all(seed: int) -> None:
    torch.default_generator.manual_seed(seed)  # the CPU generator only: never the training's CUDA RNG
    random.seed(seed)
    np.random.seed(seed % 2**32)


def _worker_init(_: int) -> None:
    """DataLoader workers ignore the preemption signals: only the rank itself decides when to stop."""
    for name in ("SIGUSR1", "SIGUSR2", "SIGINT", "SIGTERM"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)


class LoaderSource:
    """A map-style data set through a DataLoader over this rank's indices."""

    def __init__(self, dataset: Any, device: torch.device, *, batch_size: int, eval_batch_size: int,
                 num_workers: int, seed: int, rank: int, channels_last: bool = False) -> None:
        self.dataset = dataset
        self.device = device
        self.batch_size = batch_size
        self.seed, self.rank = seed, rank
        self.channels_last = channels_last
        self.cuda = device.type == "cuda"
        self._train_keys, self._eval_keys = _Keys(), _Keys()
        seeded = _Seeded(dataset)
        common: dict[str, Any] = {
            "num_workers": num_workers, "pin_memory": self.cuda, "persistent_workers": num_workers > 0,
            "worker_init_fn": _worker_init if num_workers > 0 else None,
        }
        # own generators: creating an iterator draws a base seed, never from the training RNG
        self.train_loader = DataLoader(seeded, batch_size=batch_size, sampler=self._train_keys,
                                       generator=torch.Generator().manual_seed(seed + rank), **common)
        self.eval_loader = DataLoader(seeded, batch_size=eval_batch_size, sampler=self._eval_keys,
                                      generator=torch.Generator().manual_seed(seed + rank), **common)

    def __len__(self) -> int:
        return len(self.dataset)

    def start_workers(self, *, evaluation: bool) -> None:
        """Fork the persistent workers of the loader this source serves (evaluation or training) now,
        at set-up, with no key to fetch yet; each pass then only resumes them. Forked later, at the first
        step or the first evaluation, a worker is copied from a process whose other threads are busy
        (a collective in flight, rank 0's TensorBoard writer): a lock one of them held stays held in the
        worker forever, and the rank waits for a batch that never comes."""
        loader = self.eval_loader if evaluation else self.train_loader
        if loader.num_workers > 0:
            iter(loader)

    def _move(self, batch: Any) -> Batch:
        if not isinstance(batch, (tuple, list)) or len(batch) != 2:
            raise ConfigError(f"a batch of the data set is a {type(batch).__name__}"
                              f"{f' of {len(batch)}' if isinstance(batch, (tuple, list)) else ''}, "
                              "not an (input, target) pair",
                              hint="__getitem__ must return (input, target); either may be a tensor or a "
                                   "tuple/dict of tensors")
        return (to_device(batch[0], self.device, non_blocking=self.cuda, channels_last=self.channels_last),
                to_device(batch[1], self.device, non_blocking=self.cuda))

    def first_batch(self, count: int) -> Batch:
        """The first ``count`` samples, fetched in this process (set-up checks; no worker starts)."""
        items = _Seeded(self.dataset).__getitems__([(i, batch_seed(self.seed, -1, self.rank, 0))
                                                    for i in range(count)])
        return self._move(default_collate(items))

    def batches(self, order: Sequence[int], *, epoch: int, start_step: int) -> Iterator[Batch]:
        bs = self.batch_size
        self._train_keys.keys = [(int(index), batch_seed(self.seed, epoch, self.rank, start_step + pos // bs))
                                 for pos, index in enumerate(order[start_step * bs:])]
        for batch in self.train_loader:
            yield self._move(batch)

    def eval_batches(self, indices: Sequence[int]) -> Iterator[Batch]:
        self._eval_keys.keys = [(int(index), batch_seed(self.seed, -1, 0, 0)) for index in indices]
        for batch in self.eval_loader:
            yield self._move(batch)


def check_dataset(dataset: Any, what: str, job: str) -> None:
    """A data set the runtime can shard and resume: map-style, with a length."""
    if isinstance(dataset, IterableDataset):
        raise ConfigError(
            f"job {job}: {what} is an IterableDataset ({type(dataset).__name__}); orch needs a map-style "
            "data set, so that DistributedSampler shards it by index and a resume starts at the same step",
            hint="give the data set __len__ and __getitem__(index) (a torch.utils.data.Dataset), or "
                 "load it into orchestrator.runtime.data.TensorData")
    if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
        raise ConfigError(f"job {job}: {what} is a {type(dataset).__name__}, which has no __len__ and "
                          "__getitem__", hint="return a torch.utils.data.Dataset or a TensorData")
    if len(dataset) == 0:
        raise ConfigError(f"job {job}: {what} is empty", hint="check the data directory and the job's build()")


def make_source(dataset: Any, device: torch.device, *, batch_size: int, eval_batch_size: int, num_workers: int,
                seed: int, rank: int, channels_last: bool) -> TensorSource | LoaderSource:
    """The fast path for ``TensorData``, a DataLoader for anything else."""
    if isinstance(dataset, TensorData):
        return TensorSource(dataset, device, batch_size=batch_size, eval_batch_size=eval_batch_size,
                            channels_last=channels_last)
    return LoaderSource(dataset, device, batch_size=batch_size, eval_batch_size=eval_batch_size,
                        num_workers=num_workers, seed=seed, rank=rank, channels_last=channels_last)


def default_workers(requested: int | None, cpus_per_task: int) -> int:
    """DataLoader workers per rank: the job's ``num_workers``, else the task's CPUs but one (at most 4)."""
    if requested is not None:
        return requested
    return max(0, min(cpus_per_task - 1, 4))
