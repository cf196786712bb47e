"""A helper module's print of a value reduced by a project function whose name says so (DETR's
``loss_dict_reduced = misc.reduce_dict(loss_dict)``, then ``loss_value = sum(...).item()``) is no DDP005: a helper's
own calls into the project are not followed, so the function's name is the evidence, as for DDP013. The same print of
the unreduced loss stays a finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

MISC = """\
import torch.distributed as dist


def reduce_dict(values):
    for value in values.values():
        dist.all_reduce(value)
    return values
"""

TRAINER = """\
from utils import misc


def train(model, loader, optimizer):
    for epoch in range(10):
        for batch in loader:
            loss_dict = model(batch)
            loss = sum(loss_dict.values())
            loss_dict_reduced = misc.reduce_dict(loss_dict)
            loss_value = sum(loss_dict_reduced.values()).item()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print("loss", {shown})
"""

ENTRY = """\
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

from trainer import train

dist.init_process_group("nccl")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
data = list(range(10))
sampler = DistributedSampler(data)
train(model, DataLoader(data, sampler=sampler), torch.optim.SGD(model.parameters(), lr=0.1))
"""


@pytest.mark.parametrize(("shown", "found"), [("loss_value", False), ("loss.item()", True)])
def test_a_value_a_project_function_reduces(tmp_path: Path, shown: str, found: bool) -> None:
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "utils" / "misc.py").write_text(MISC, encoding="utf-8")
    (tmp_path / "trainer.py").write_text(TRAINER.format(shown=shown), encoding="utf-8")
    (tmp_path / "train.py").write_text(ENTRY, encoding="utf-8")
    findings = [f for f in check_file(tmp_path / "train.py") if f.code == "DDP005"]
    assert bool(findings) is found, findings
