"""DDP008 leaves the rendezvous written for a group of one process that the same block starts next (lightweight-gan's
sync-BN group on a single GPU: ``os.environ["MASTER_ADDR"] = "localhost"`` then ``init_process_group("nccl",
rank=0, world_size=1)``): there is no one to meet. The same writes before a group of the launcher's size are
reported."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

_SCRIPT = """\
import os
import torch
import torch.distributed as dist


class Trainer:
    def __init__(self, syncbatchnorm, is_ddp):
        if syncbatchnorm and not is_ddp:
            os.environ["MASTER_ADDR"] = "localhost"
            os.environ["MASTER_PORT"] = "12355"
            dist.init_process_group({call})
        self.model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
"""


@pytest.mark.parametrize(("call", "lines"), [
    ('"nccl", rank=0, world_size=1', []),  # a world of one: nothing to meet
    ('"nccl", "env://", None, 1, 0', []),  # the same, world_size the fourth positional argument
    ('"nccl", rank=0, world_size=int(os.environ["WORLD_SIZE"])', [9, 10, 11]),  # the launcher's world: its address
])                                                                              # (and rank 0) fixed
def test_a_rendezvous_written_for_a_group_of_one_is_not_reported(call: str, lines: list[int]) -> None:
    found = [f.line for f in check_source(_SCRIPT.format(call=call), "train.py") if f.code == "DDP008"]
    assert found == lines
