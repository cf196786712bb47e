"""A data set rebuilt and reshuffled each epoch inside the epoch loop stands in for set_epoch (no DDP004); a
sampler rebuilt with the same seed and the same data each epoch does not."""

from __future__ import annotations

from orchestrator.doctor import check_source

HEAD = """\
import os
import random

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, Subset

dist.init_process_group("nccl")
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
base = torch.utils.data.TensorDataset(torch.randn(100, 2))
model = DDP(torch.nn.Linear(2, 2).cuda())
for epoch in range(3):
"""

LOOP_END = """\
    for (x,) in DataLoader(data, sampler=sampler, batch_size=4):
        model(x.cuda()).sum().backward()
"""

PERMUTATION = HEAD + """\
    data = Subset(base, np.random.RandomState(epoch).permutation(len(base)))
    sampler = DistributedSampler(data)
""" + LOOP_END

SEEDED_SHUFFLE = HEAD + """\
    ids = list(range(len(base)))
    random.seed(1000 + epoch)
    random.shuffle(ids)
    data = Subset(base, ids)
    sampler = DistributedSampler(data)
""" + LOOP_END

GENERATOR = HEAD + """\
    g = torch.Generator()
    g.manual_seed(epoch)
    data = Subset(base, torch.randperm(len(base), generator=g).tolist())
    sampler = DistributedSampler(data)
""" + LOOP_END

SAMPLER_SEED = HEAD + """\
    data = base
    sampler = DistributedSampler(data, seed=17 + epoch)
""" + LOOP_END

SAME_ORDER = HEAD + """\
    data = base
    random.shuffle(list(range(10)))
    sampler = DistributedSampler(data)
""" + LOOP_END


def _ddp004(source: str) -> list[int]:
    return [f.line for f in check_source(source, "train.py") if f.code == "DDP004"]


def test_a_per_epoch_reshuffle_stands_in_for_set_epoch() -> None:
    for source in (PERMUTATION, SEEDED_SHUFFLE, GENERATOR, SAMPLER_SEED):
        assert _ddp004(source) == [], source


def test_a_sampler_rebuilt_over_the_same_order_each_epoch_still_needs_set_epoch() -> None:
    assert _ddp004(SAME_ORDER) == [17]  # an unseeded shuffle of something else: the sampler's order never changes


REBUILT = HEAD + """\
    data = Subset(base, list(range(len(base))), seed=7 * epoch)
    sampler = DistributedSampler(data)
""" + LOOP_END

REBUILT_ONCE = HEAD.replace("for epoch in range(3):\n", "data = Subset(base, list(range(100)), seed=7)\n"
                                                      "for epoch in range(3):\n") + """\
    sampler = DistributedSampler(data)
""" + LOOP_END


def test_a_data_set_rebuilt_with_the_epoch_as_its_seed_stands_in_for_set_epoch() -> None:
    assert _ddp004(REBUILT) == []
    assert _ddp004(REBUILT_ONCE) == [16]  # made once, before the loop: the same order every epoch
