"""Code one process runs in a distributed script has no rank's device to bind (no DDP001): the single-process side
of a distributed switch, and the spawner's own work before it starts the ranks (RelBench's preprocessing on
``"cuda"`` ahead of ``mp.spawn(run_main, ...)``). After the spawn, or in the ranks it starts, the current device is
every rank's."""

from __future__ import annotations

from orchestrator.doctor import check_source

SPAWNER = """\
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def run_main(rank, world_size, features):
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29500", rank=rank, world_size=world_size)
    model = DDP(torch.nn.Linear(2, 2).to(rank), device_ids=[rank])
    model(features.to(rank)).sum().backward()


if __name__ == "__main__":
    preproc_device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    features = torch.randn(8, 2).to(preproc_device).cpu()
    world_size = torch.cuda.device_count()
    mp.spawn(run_main, args=(world_size, features), nprocs=world_size, join=True)
"""


def _ddp001(source: str) -> list[int]:
    return [f.line for f in check_source(source, "train.py") if f.code == "DDP001"]


def test_the_spawners_own_cuda_work_before_the_spawn_is_one_process() -> None:
    assert _ddp001(SPAWNER) == []


def test_the_ranks_current_device_is_still_reported() -> None:
    ranks_on_current = SPAWNER.replace("model(features.to(rank))", "model(features.cuda())")
    assert _ddp001(ranks_on_current) == [10]
