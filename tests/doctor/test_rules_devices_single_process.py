"""DDP001 and the run of one process: the current device used on the side of an ``if`` whose other side joins the
group or wraps the model in DDP (``if distributed: ... DDP(model, device_ids=[local_rank])`` / ``else: model =
DataParallel(model).cuda()``) is that run's only device: not reported, nor is the distributed side's named device
(not every device is named). The same use on the distributed side, or with no such ``if``, still is."""

from __future__ import annotations

from orchestrator.doctor import check_source

SCRIPT = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

distributed = int(os.environ.get("WORLD_SIZE", 1)) > 1
model = torch.nn.Linear(2, 2)
if distributed:
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    {distributed_side}
else:
    model = torch.nn.DataParallel(model).cuda()
"""


def lines(source: str) -> list[int]:
    return [f.line for f in check_source(source, "t.py") if f.code == "DDP001"]


def test_the_current_device_of_the_single_process_side_is_not_reported() -> None:
    assert lines(SCRIPT.format(distributed_side="model = DDP(model.cuda(local_rank), device_ids=[local_rank])")) == []


def test_the_current_device_on_the_distributed_side_is() -> None:
    assert lines(SCRIPT.format(distributed_side="model = DDP(model.cuda(), device_ids=[local_rank])")) == [11]


def test_without_the_branch_the_current_device_is_reported() -> None:
    source = SCRIPT.format(distributed_side="pass").replace("else:\n    model", "model")
    assert lines(source) == [12]
