"""DDP024 at a ``return`` (or a successful exit) under a rank condition that leaves the function before a later loop
of it making collectives (an evaluation-only run on rank 0 ahead of the training loop): the other ranks go on into the
loop's gradient all-reduce without that rank. Silent where the loop after it makes no collective, where the condition
is not a rank's or does not hold on rank 0 (``if rank != 0: return``), and for a failing exit."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

_SCRIPT = """
import os
import sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model):
    print(model(torch.ones(2)).sum().item())


def main(args):
    dist.init_process_group("gloo")
    rank = int(os.environ["RANK"])
    model = {model}
    if {test}:
        evaluate(model)
        {leave}
    for epoch in range(10):
        loss = model(torch.ones(2)).sum()
        loss.backward()
"""


@pytest.mark.parametrize(("model", "test", "leave", "found"), [
    ("DDP(torch.nn.Linear(2, 2))", "args.eval_first and rank == 0", "return", True),
    ("DDP(torch.nn.Linear(2, 2))", "rank == 0", "sys.exit()", True),
    ("DDP(torch.nn.Linear(2, 2))", "rank == 0", "sys.exit(1)", False),  # a failure the launcher sees: no hang
    ("DDP(torch.nn.Linear(2, 2))", "args.eval_only", "return", False),  # every rank leaves
    ("torch.nn.Linear(2, 2)", "rank == 0", "return", False),  # no collective in the loop after it
    ("DDP(torch.nn.Linear(2, 2))", "rank != 0", "return", False),  # the others leave rank 0 its own work
    ("DDP(torch.nn.Linear(2, 2))", "rank >= 2", "return", False),
])
def test_a_rank_leaves_before_the_training_loop(tmp_path: Path, model: str, test: str, leave: str,
                                                 found: bool) -> None:
    text = _SCRIPT.format(model=model, test=test, leave=leave)
    (tmp_path / "train.py").write_text(text)
    findings = [f for f in check_file(tmp_path / "train.py") if f.code == "DDP024"]
    at = text.splitlines().index(f"        {leave}") + 1
    assert [f.line for f in findings] == ([at] if found else [])
    for f in findings:
        assert "leaves the function before the loop at line 20" in f.message
        assert "loss.backward() (DDP's gradient all-reduce) at line 22" in f.message
