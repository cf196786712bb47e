"""DDP013 and TorchMetrics: ``metric.compute()`` of a TorchMetrics metric syncs its state across the processes before
it computes, so an accuracy read that way over a DistributedSampler's shard is the data set's (no finding); with
``sync_on_compute=False``, or with a sum of the shard's own, it is one shard's (reported)."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

SCRIPT = """\
import os
import torch
import torch.distributed as dist
import torchmetrics
from torch.utils.data import DataLoader, DistributedSampler


def evaluate(model, loader, device):
{make}
    with torch.no_grad():
        for x, y in loader:
{update}
{read}
    return acc


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 10).cuda(), device_ids=[local_rank])
    val = list(range(10))
    val_loader = DataLoader(val, sampler=DistributedSampler(val, shuffle=False))
    for epoch in range(3):
        acc = evaluate(model, val_loader, device)
        if dist.get_rank() == 0:
            print(f"epoch {{epoch}} val acc {{acc:.3f}}")
"""

METRIC = "    metric = torchmetrics.Accuracy(task='multiclass', num_classes=10{extra}).to(device)"
UPDATE = "            metric.update(model(x.to(device)), y.to(device))"
CASES = {
    "compute syncs": (METRIC.format(extra=""), UPDATE, "    acc = metric.compute()", False),
    "sync turned off": (METRIC.format(extra=", sync_on_compute=False"), UPDATE, "    acc = metric.compute()", True),
    "a shard's own sum": ("    correct, total = 0, 0",
                          "            correct += (model(x).argmax(1) == y).sum().item()\n            total += len(y)",
                          "    acc = correct / total", True),
}


@pytest.mark.parametrize(("make", "update", "read", "reported"), CASES.values(), ids=CASES.keys())
def test_a_torchmetrics_compute_is_the_data_sets_value(make: str, update: str, read: str, reported: bool) -> None:
    source = SCRIPT.format(make=make, update=update, read=read)
    printed = next(n for n, line in enumerate(source.splitlines(), 1) if "print(" in line)
    assert [f.line for f in check_source(source, "train.py") if f.code == "DDP013"] == ([printed] if reported else [])
