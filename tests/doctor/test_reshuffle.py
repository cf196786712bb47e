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


ONE_PASS = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

EPOCHS = 20


def build_loader():
    data = TensorDataset(torch.randn(100 * EPOCHS, 2))  # sized for the whole run
    return DataLoader(data, sampler=DistributedSampler(data), batch_size=4)


def train(train_loader, model):
    for idx, (x,) in enumerate(train_loader):
        epoch = idx // 25
        model(x).sum().backward()


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 2))
    train(build_loader(), model)


main()
"""


def _ddp004(text: str) -> list[int]:
    return [f.line for f in check_source(text, "train.py") if f.code == "DDP004"]


def test_a_loader_read_in_one_pass_for_the_whole_run_needs_no_set_epoch() -> None:
    """PySOT: one ``for idx, data in enumerate(train_loader)`` over a data set sized for every epoch."""
    assert _ddp004(ONE_PASS) == []


def test_a_pass_repeated_by_a_loop_still_needs_set_epoch() -> None:
    sampler_line = ONE_PASS.splitlines().index("    return DataLoader(data, sampler=DistributedSampler(data), "
                                               "batch_size=4)") + 1
    for repeated in (
        ONE_PASS.replace("    train(build_loader(), model)", "    loader = build_loader()\n"
                         "    for _ in range(EPOCHS):\n        train(loader, model)"),  # the caller loops
        ONE_PASS.replace("    for idx, (x,) in enumerate(train_loader):", "    for _ in range(EPOCHS):\n"
                         "     for idx, (x,) in enumerate(train_loader):"),  # an epoch loop around it
        ONE_PASS.replace("\nmain()\n", "\nfor _ in range(2):\n    main()\n"),  # the whole run twice
        ONE_PASS.replace("\nmain()\n", "\n"),  # nothing here calls it: who knows how often
    ):
        assert _ddp004(repeated) == [sampler_line], repeated


STEPPED = """\
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("nccl")
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
steps = 1000
data = TensorDataset(torch.randn(steps * 4, 2))  # sized for every step: one pass is the whole run
sampler = DistributedSampler(data)
train_loader = DataLoader(data, sampler=sampler, batch_size=4)
train_iter = enumerate(train_loader)
model = DDP(torch.nn.Linear(2, 2).cuda())
for step in range(steps):
    _, (x,) = next(train_iter)
    model(x.cuda()).sum().backward()
"""

RESTARTED = STEPPED.replace("""    _, (x,) = next(train_iter)
""", """    try:
        _, (x,) = next(train_iter)
    except StopIteration:
        train_iter = enumerate(train_loader)  # a second epoch, in the same order
        _, (x,) = next(train_iter)
""")


def test_a_loader_drawn_from_once_over_the_steps_has_no_next_epoch() -> None:
    """DANNet's ``trainloader_iter = enumerate(trainloader)`` then ``next()`` in a loop over steps: one pass over a
    data set sized for the whole run; made again when it runs out, it is a second epoch in the first one's order."""
    assert _ddp004(STEPPED) == []
    assert _ddp004(RESTARTED) == [12]
