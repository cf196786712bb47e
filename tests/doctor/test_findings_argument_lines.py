"""A finding about one argument of a call written over several lines names that argument's line (the line to
change: ``rank=`` of an ``init_process_group``, its ``world_size=``, a ``DistributedSampler``'s ``rank=``), for
the launched script and for the spawned one; its evidence still shows the call, and a suppression on any line
of the statement still counts."""

from __future__ import annotations

from orchestrator.doctor import check_source

LAUNCHED = """\
import os
import torch
import torch.distributed as dist
from torch.utils.data import DistributedSampler

local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group(  {ignore}
    backend="nccl",
    world_size=torch.cuda.device_count(),
    rank=local_rank,
)
sampler = DistributedSampler(
    dataset,
    rank=local_rank,
)
"""

SPAWNED = """\
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(index, world_size):
    dist.init_process_group(
        "nccl",
        init_method="tcp://10.0.0.1:23456",
        world_size=world_size,
        rank=index,
    )


if __name__ == "__main__":
    mp.spawn(worker, args=(torch.cuda.device_count(),), nprocs=torch.cuda.device_count())
"""


def test_the_finding_names_the_arguments_line_and_shows_the_call() -> None:
    found = [f for f in check_source(LAUNCHED.format(ignore=""), "t.py") if f.code in ("DDP008", "DDP016")]
    assert sorted((f.code, f.line) for f in found) == [("DDP008", 10), ("DDP016", 11), ("DDP016", 15)]
    assert all(f.evidence.startswith(("lines 8-12: `dist.init_process_group(", "lines 13-16: `DistributedSampler("))
               for f in found)


def test_a_suppression_on_the_calls_first_line_still_counts() -> None:
    found = check_source(LAUNCHED.format(ignore="# orch: ignore[DDP008, DDP016]"), "t.py")
    assert sorted((f.code, f.line) for f in found if f.code in ("DDP008", "DDP016")) == [("DDP016", 15)]


def test_a_spawn_index_as_the_rank_names_the_rank_argument() -> None:
    found = [f for f in check_source(SPAWNED, "t.py") if f.code == "DDP016"]
    assert [f.line for f in found] == [11]
