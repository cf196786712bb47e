"""A device bound by a framework (Accelerate, Lightning, Fabric) draws no device-binding finding (DDP001); the
same script with no framework still does."""

from __future__ import annotations

from orchestrator.doctor import check_source

ACCELERATE = """\
import torch
import torch.distributed as dist
from accelerate import Accelerator

accelerator = Accelerator()
model = torch.nn.Linear(2, 2).cuda()
model = accelerator.prepare(model)
if dist.get_rank() == 0:
    print("ready")
"""

ACCELERATOR_DEVICE = """\
import torch
import torch.distributed as dist


def train(accelerator: "Accelerator", model):
    model.to(accelerator.device)
    x = torch.ones(2).cuda()
    dist.barrier()
"""

FABRIC = """\
import torch
import torch.distributed as dist
import lightning as L

fabric = L.Fabric(accelerator="cuda", devices=2)
fabric.launch()
x = torch.randn(4, 2, device="cuda")
dist.barrier()
"""

LIGHTNING = """\
import torch
import torch.distributed as dist
import lightning as L


class Module(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.mask = torch.ones(2).cuda()

    def training_step(self, batch, idx):
        dist.barrier()
        return (batch * self.mask).sum()
"""

PLAIN = """\
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
model = torch.nn.Linear(2, 2).cuda()
"""


def _ddp001(source: str) -> list[int]:
    return [f.line for f in check_source(source, "train.py") if f.code == "DDP001"]


def test_a_framework_bound_device_draws_no_device_binding_finding() -> None:
    for source in (ACCELERATE, ACCELERATOR_DEVICE, FABRIC, LIGHTNING):
        assert _ddp001(source) == [], source


def test_without_a_framework_the_unbound_device_is_still_reported() -> None:
    assert _ddp001(PLAIN) == [5]


FLAG_UNDER_ACCELERATE = """\
import argparse
import torch
from accelerate import Accelerator

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
args = parser.parse_args()
accelerator = Accelerator()
model = accelerator.prepare(torch.nn.Linear(2, 2))
if args.local_rank in (-1, 0):
    print("start")
"""


def test_a_legacy_local_rank_flag_beside_a_framework_is_only_possible() -> None:
    """DDP015 says the device or the distributed mode comes from the flag: Accelerate binds both, so what the flag
    still decides is a guess (shown with --all); with no framework it stays likely."""
    [found] = [f for f in check_source(FLAG_UNDER_ACCELERATE, "train.py") if f.code == "DDP015"]
    assert found.confidence == "possible" and "accelerate.Accelerator at line 8 binds the device" in found.evidence
    plain = FLAG_UNDER_ACCELERATE.replace("accelerator = Accelerator()\nmodel = accelerator.prepare(", "model = (")
    plain += "torch.cuda.set_device(args.local_rank)\n"
    [found] = [f for f in check_source(plain, "train.py") if f.code == "DDP015"]
    assert found.confidence == "likely"
