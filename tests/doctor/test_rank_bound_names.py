"""DDP020 on some ranks (doctor/rank_bound_names.py): a name bound only where global rank 0 runs, then read where
other ranks run too. EAGLE's ``if accelerator.is_main_process: import wandb`` read under ``if
accelerator.is_local_main_process:`` (the second node's first process: a NameError after the first epoch), a writer
made under ``if rank == 0:`` and used with no rank test. Silent where the name is bound on every path, read under the
same kind of test, or where the other ranks leave first."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

_EAGLE = """
import torch
from accelerate import Accelerator

accelerator = Accelerator()
if accelerator.is_main_process:
    import wandb
    wandb.init(project="p")
for epoch in range(3):
    loss = torch.ones(1)
    if {read_guard}:
        wandb.log({{"loss": loss.item()}})
"""


@pytest.mark.parametrize(("read_guard", "found"), [
    ("accelerator.is_local_main_process", [(12, "each node's first process")]),
    ("epoch > 0", [(12, "on every rank")]),  # a test of no rank: every rank reads it
    ("accelerator.is_main_process", []),  # the same test: rank 0 alone reads it
    ("accelerator.is_main_process and epoch > 0", []),
])
def test_a_name_imported_on_global_rank_zero_alone(read_guard: str, found: list[tuple[int, str]]) -> None:
    findings = [f for f in check_source(_EAGLE.format(read_guard=read_guard), "train.py") if f.code == "DDP020"]
    assert [(f.line, next(w for w in ("each node's first process", "on every rank") if w in f.evidence))
            for f in findings] == found
    assert all(f.severity == "warning" and f.confidence == "likely" and "wandb" in f.fix for f in findings)


_WRITER = """
import os
import torch.distributed as dist
from torch.utils.tensorboard import SummaryWriter


def train(loader):
    rank = dist.get_rank()
{before}    if rank == 0:
        writer = SummaryWriter("runs")
{leave}    for step, x in enumerate(loader):
        writer.add_scalar("x", x, step)
"""


@pytest.mark.parametrize(("before", "leave", "found"), [
    ("", "", [12]),
    ("    writer = None\n", "", []),  # bound on every rank first
    ("", "    if rank != 0:\n        return\n", []),  # the other ranks leave before the read
])
def test_a_writer_made_on_rank_zero_and_used_on_every_rank(before: str, leave: str, found: list[int]) -> None:
    findings = check_source(_WRITER.format(before=before, leave=leave), "train.py")
    assert [f.line for f in findings if f.code == "DDP020"] == found


def test_a_local_rank_guard_binds_on_every_node_and_is_not_global_rank_zero() -> None:
    source = ("import os\nlocal_rank = int(os.environ['LOCAL_RANK'])\nif local_rank == 0:\n    import wandb\n"
              "if local_rank == 0:\n    wandb.log({})\n")
    assert [f for f in check_source(source, "train.py") if f.code == "DDP020"] == []


_PREPARED = """
from accelerate import Accelerator
from torch.utils.data import TensorDataset

accelerator = Accelerator()
train_dataset = TensorDataset()
if accelerator.is_main_process:
    eval_dataset = TensorDataset()
{between}model, train_dataset, eval_dataset = accelerator.prepare(model, train_dataset, eval_dataset)
model, eval_dataset = accelerator.prepare(model, eval_dataset)
"""


@pytest.mark.parametrize(("between", "found"), [
    ("", [9]),  # the statement's own binding comes after its value reads the name; the next line's after that
    ("eval_dataset = None\n", []),  # bound on every rank before the read
])
def test_a_name_rebound_by_the_statement_that_reads_it_first(between: str, found: list[int]) -> None:
    """VITS under Accelerate: ``eval_dataset`` is made on the main process only, then every rank hands it to
    ``accelerator.prepare`` in the statement that binds it again (UnboundLocalError on every other rank)."""
    findings = check_source(_PREPARED.format(between=between), "train.py")
    assert [f.line for f in findings if f.code == "DDP020"] == found
