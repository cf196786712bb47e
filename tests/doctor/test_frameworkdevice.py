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
