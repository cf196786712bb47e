"""A flag raised on rank 0 (``default_gpu = False``, then ``if rank == 0: default_gpu = True``, with ``else:
default_gpu = True`` for the run no launcher started) is a rank test wherever it guards: a save, a print, a
collective. A flag raised on every rank, or on a side of the test that many ranks take, is not."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

# the training loop both scripts run (no braces: it joins templates that are formatted)
_LOOP = """\
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        loss = model(torch.randn(4, 2).cuda()).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""

SCRIPT = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(args):
    local_rank = int(os.environ.get("LOCAL_RANK", -1))
    if local_rank != -1:
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
    default_gpu = False
    if dist.is_available() and local_rank != -1:
        rank = dist.get_rank()
        if {test}:
            default_gpu = True
    else:
        default_gpu = True
    model = DDP(torch.nn.Linear(2, 2).cuda(), device_ids=[local_rank])
""" + _LOOP + """\
        if default_gpu:
            torch.save(model.module.state_dict(), "ckpt.pt")
"""


def saves(source: str) -> list[int]:
    return [f.line for f in check_source(source, "t.py") if f.code == "DDP006"]


def test_a_flag_raised_on_rank_0_guards_the_save() -> None:
    assert saves(SCRIPT.format(test="rank == 0")) == []


@pytest.mark.parametrize("test", ["rank != 0", "rank > 0", "True"])
def test_a_flag_raised_off_rank_0_or_everywhere_does_not(test: str) -> None:
    assert saves(SCRIPT.format(test=test)) == [27]


def test_a_flag_also_raised_in_the_launched_run_does_not() -> None:
    source = SCRIPT.format(test="rank == 0").replace("    else:\n        default_gpu = True\n",
                                                       "    default_gpu = True\n")
    assert saves(source) == [26]


def test_an_attribute_raised_on_rank_0_guards_the_save() -> None:
    source = SCRIPT.format(test="rank == 0").replace("default_gpu", "args.default_gpu")
    assert saves(source) == []


LOWERED = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(rank, world_size, verbose=1):
    if {test}:
        verbose = 0
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    model = DDP(torch.nn.Linear(2, 2).cuda(), device_ids=[rank])
""" + _LOOP + """\
        if verbose:
            print(f"epoch {{epoch}} loss {{loss.item()}}")
            torch.save(model.module.state_dict(), "ckpt.pt")


if __name__ == "__main__":
    train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
"""


def test_a_parameter_lowered_off_rank_0_guards_the_print_and_the_save() -> None:
    # 3D-EMGP's `def train(rank, config, world_size, verbose=1): if rank != 0: verbose = 0`
    found = {f.code for f in check_source(LOWERED.format(test="rank != 0"), "t.py")}
    assert not found & {"DDP005", "DDP006"}


@pytest.mark.parametrize("test", ["rank == 0", "world_size > 8"])
def test_a_parameter_lowered_on_rank_0_or_by_another_test_does_not(test: str) -> None:
    found = {f.code for f in check_source(LOWERED.format(test=test), "t.py")}
    assert {"DDP005", "DDP006"} <= found
