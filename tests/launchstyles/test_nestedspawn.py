"""A spawn one rank makes for a job of its own (FeatureDecorrelationSSL's linear evaluation, spawned from index 0
after training into a fresh group on localhost) is not the training's: no DDP014, DDP008 or DDP016 at it. Called on
every rank, or with no call in sight, it is read as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

EVALUATE = """\
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12356"
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    DDP(torch.nn.Linear(2, 2))


def main(world_size):
    mp.spawn(worker, args=(world_size,), nprocs=world_size)


if __name__ == "__main__":
    main(torch.cuda.device_count())
"""

TRAIN = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from evaluate import main as evaluate


def train(device):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 2))
    model(torch.ones(2)).sum().backward()
{call}


if __name__ == "__main__":
    train(0)
"""


@pytest.mark.parametrize(("call", "found"), [
    ("    if dist.get_rank() == 0:\n        evaluate(2)", False),  # one rank's own job
    ("    evaluate(2)", True),  # every rank spawns: nested in the launched ranks
])
def test_a_spawn_one_rank_makes_is_not_the_trainings(tmp_path: Path, call: str, found: bool) -> None:
    (tmp_path / "evaluate.py").write_text(EVALUATE)
    (tmp_path / "train.py").write_text(TRAIN.format(call=call))
    codes = {f.code for f in check_file(tmp_path / "train.py")
             if Path(f.file).name == "evaluate.py"}
    assert bool(codes & {"DDP014", "DDP016"}) == found, codes
