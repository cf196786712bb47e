"""DDP024 at a ``break`` on one rank that leaves a training loop whose other ranks still make a collective, where the
loop lives in a helper module and its collective in another module of the project (JoeyNMT's ``training.py`` breaking
on rank 0 while the loop's ``helpers_for_ddp.ddp_reduce`` all-reduces): the helper's calls are followed through the
script's project. Silent where that other module makes no collective."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

_REDUCE = """
import torch.distributed as dist


def ddp_reduce(value):
    {body}
    return value
"""

_ENGINE = """
import torch.distributed as dist
from reduce import ddp_reduce


class Trainer:
    def __init__(self, model, rank):
        self.model = model
        self.rank = rank

    def train(self, loader, limit):
        for batch in loader:
            loss = self.model(batch).sum()
            loss.backward()
            total = ddp_reduce(loss.detach())
            if total.item() < limit and self.rank == 0:
                break
"""

_SCRIPT = """
import os
import torch
import torch.distributed as dist
from engine import Trainer

dist.init_process_group("gloo")
Trainer(torch.nn.Linear(2, 2), dist.get_rank()).train([], 0.1)
"""


@pytest.mark.parametrize(("body", "found"), [
    ("dist.all_reduce(value)", [17]),
    ("value = value * 1", []),
])
def test_a_rank_break_in_a_helpers_loop_that_reduces_through_another_module(tmp_path: Path, body: str,
                                                                           found: list[int]) -> None:
    (tmp_path / "reduce.py").write_text(_REDUCE.format(body=body))
    (tmp_path / "engine.py").write_text(_ENGINE)
    (tmp_path / "train.py").write_text(_SCRIPT)
    findings = check_file(tmp_path / "train.py")
    assert [f.line for f in findings if f.code == "DDP024" and f.file.endswith("engine.py")] == found
