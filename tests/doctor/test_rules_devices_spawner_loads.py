"""DDP009 and the process that spawns the ranks: a checkpoint the spawner loads before ``mp.spawn`` (in a function
no worker calls, names or reaches) is loaded once, in that process, and handed to the ranks: not reported. The same
load reached from the worker, a worker not in sight (a ``partial``), or a load at module level (run again in every
child the ``spawn`` start method makes) are."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

SCRIPT = """\
import functools
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def get_model():
    model = torch.nn.Linear(2, 2)
    model.load_state_dict(torch.load("pretrained.ckpt"))
    return model


def worker(rank, world_size, model):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device(rank)
    {in_worker}
    ddp = DDP(model.cuda(), device_ids=[rank])
    loss = ddp(torch.randn(4, 2).cuda()).sum()
    loss.backward()


def main():
    world_size = torch.cuda.device_count()
    model = get_model()
    mp.spawn({worker}, args=(world_size, model), nprocs=world_size)


if __name__ == "__main__":
    main()
"""


def loads(in_worker: str = "pass", worker: str = "worker") -> list[int]:
    source = SCRIPT.format(in_worker=in_worker, worker=worker)
    return [f.line for f in check_source(source, "t.py") if f.code == "DDP009"]


def test_a_load_before_the_spawn_in_the_spawning_process_is_not_reported() -> None:
    assert loads() == []


@pytest.mark.parametrize(("in_worker", "worker"), [
    ("model = get_model()", "worker"),                       # the worker loads it too
    ("factory = get_model", "worker"),                       # the worker names it: it may call it
    ("pass", "functools.partial(worker)"),                   # a worker not in sight
])
def test_a_load_a_rank_may_run_is_reported(in_worker: str, worker: str) -> None:
    assert loads(in_worker, worker) == [10]


def test_a_load_at_module_level_runs_in_every_spawned_child() -> None:
    source = SCRIPT.format(in_worker="pass", worker="worker").replace(
        "def main():\n", "state = torch.load('pretrained.ckpt')\nmodel0 = torch.nn.Linear(2, 2)\n"
        "model0.load_state_dict(state)\n\n\ndef main():\n")
    assert [f.line for f in check_source(source, "t.py") if f.code == "DDP009"] == [23]


def test_a_worker_also_called_directly_runs_the_callers_load_in_every_launched_rank() -> None:
    """``if launched: worker(...) else: mp.spawn(worker, ...)``: under torchrun the caller's load runs on every rank."""
    source = SCRIPT.format(in_worker="pass", worker="worker").replace(
        "    mp.spawn(worker,", "    if 'LOCAL_RANK' in __import__('os').environ:\n"
        "        worker(int(__import__('os').environ['LOCAL_RANK']), world_size, model)\n"
        "    else:\n        mp.spawn(worker,")
    assert "worker(int(" in source
    assert [f.line for f in check_source(source, "t.py") if f.code == "DDP009"] == [10]
