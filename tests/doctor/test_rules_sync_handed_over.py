"""DDP002 and a collective-making method one side of a rank test calls and the other hands to be called
(``if sweep and rank == 0: wandb.agent(sweep, function=trainer.train) else: trainer.train()``: the physics
pre-trainer's entry): both sides run it, so it is no collective on some ranks only. Handing over something else is
still reported."""

from __future__ import annotations

from orchestrator.doctor import check_source

SCRIPT = """\
import os
import torch
import torch.distributed as dist
import wandb


class Trainer:
    def train(self):
        loss = torch.zeros(1)
        dist.all_reduce(loss)


dist.init_process_group("gloo")
rank = dist.get_rank()
trainer = Trainer()
if os.environ.get("SWEEP") and rank == 0:
    wandb.agent(os.environ["SWEEP"], function={handed})
else:
    trainer.train()
"""


def test_a_method_handed_over_on_the_other_side_runs_there_too() -> None:
    assert [f.line for f in check_source(SCRIPT.format(handed="trainer.train"), "t.py") if f.code == "DDP002"] == []


def test_handing_over_another_function_is_still_reported() -> None:
    assert [f.line for f in check_source(SCRIPT.format(handed="print"), "t.py") if f.code == "DDP002"] == [19]
