"""A rank held in a name that an ``if`` sets per path (``source/names.py`` ``Module.other_branch``): ``if distributed:
rank = int(os.environ["LOCAL_RANK"])`` / ``else: rank = 0``. The last assignment by line is the single-process
fallback; on the distributed path the name holds the local rank, so ``DistributedSampler(rank=rank)`` is DDP016
(from the second node on the nodes read the same shards), and ``if rank == 0:`` is a guard of each node's first
process, not a constant test (docTR's detection trainer: no DDP005 on its rank-0 log lines). Also the conditional
expression (``int(os.environ["LOCAL_RANK"]) if "LOCAL_RANK" in os.environ else 0``), and an ``if``/``elif``/``else``
whose branches read ``LOCAL_RANK`` and ``RANK`` holds no one kind: no device finding from it."""

from __future__ import annotations

import pytest

from orchestrator.doctor.check import check_source

_HEAD = """import os
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

world_size = int(os.environ.get("WORLD_SIZE", 1))
"""

_BRANCHES = _HEAD + """if world_size > 1:
    rank = int(os.environ.get("LOCAL_RANK", 0))
    dist.init_process_group("nccl")
    torch.cuda.set_device(rank)
else:
    rank = 0
dataset = list(range(100))
sampler = DistributedSampler(dataset, rank=rank, shuffle=True)
loader = DataLoader(dataset, sampler=sampler)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
for epoch in range(3):
    sampler.set_epoch(epoch)
    for x in loader:
        loss = model(x).sum()
        loss.backward()
    if rank == 0:
        print(f"epoch {epoch} loss {loss.item()}")
"""


def _codes(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source(source, "train.py")]


def test_a_local_rank_set_on_the_distributed_branch_ranks_the_sampler() -> None:
    found = _codes(_BRANCHES)
    assert ("DDP016", 14) in found  # DistributedSampler(rank=rank): the local rank
    assert not any(code == "DDP005" for code, _ in found)  # printed under `if rank == 0:`, a guard


@pytest.mark.parametrize("value", [
    'int(os.environ["LOCAL_RANK"]) if "LOCAL_RANK" in os.environ else 0',
    '0 if "LOCAL_RANK" not in os.environ else int(os.environ["LOCAL_RANK"])',
])
def test_a_conditional_expression_holding_the_local_rank_ranks_the_sampler(value: str) -> None:
    source = _HEAD + f"local_rank = {value}\n" + (
        "dist.init_process_group('nccl')\n"
        "sampler = DistributedSampler(list(range(10)), num_replicas=world_size, rank=local_rank)\n")
    assert ("DDP016", 9) in _codes(source)


def test_the_fallback_alone_or_sequential_assignments_are_not_a_branch() -> None:
    # rank read, then overwritten on every path: 0 is what it holds
    source = _BRANCHES.replace("else:\n    rank = 0\n", "rank = 0\n")
    assert not any(code == "DDP016" for code, _ in _codes(source))


def test_branches_reading_local_and_global_ranks_hold_no_one_kind() -> None:
    source = _HEAD + """if "LOCAL_RANK" in os.environ:
    rank = int(os.environ["LOCAL_RANK"])
elif "RANK" in os.environ:
    rank = int(os.environ["RANK"])
else:
    rank = 0
dist.init_process_group("nccl")
torch.cuda.set_device(rank)
"""
    assert not any(code == "DDP010" for code, _ in _codes(source))


def test_a_rank_set_in_another_branch_does_not_reach_the_init_of_this_one() -> None:
    """``if "LOCAL_RANK" in os.environ: rank = LOCAL_RANK; init(rank=rank)`` / ``elif "SLURM_PROCID" in os.environ:
    rank = SLURM_PROCID; init(rank=rank)``: only the first init takes the local rank."""
    source = """import os
import torch.distributed as dist


def init_dist():
    if "LOCAL_RANK" in os.environ:
        rank = int(os.environ["LOCAL_RANK"])
        dist.init_process_group("nccl", rank=rank, world_size=int(os.environ["WORLD_SIZE"]))
    elif "SLURM_PROCID" in os.environ:
        rank = int(os.environ["SLURM_PROCID"])
        dist.init_process_group("nccl", rank=rank, world_size=int(os.environ["SLURM_NTASKS"]))
"""
    assert [f.line for f in check_source(source, "t.py") if f.code == "DDP016"] == [8]
