"""DDP024 at a ``break`` on one rank out of a loop whose only collective is DDP's gradient all-reduce in
``loss.backward()`` (the stop at ``n_iters`` decided under ``if local_rank == 0:``): that rank leaves while the others
wait in the next step's backward. Silent where no model is wrapped in DDP, and for a rank-0 ``break`` out of an inner
loop that makes no backward."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

_SCRIPT = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = int(os.environ["LOCAL_RANK"])
model = {model}
step = 0
for batch in range(100):
    loss = model(torch.ones(2)).sum()
    loss.backward()
    if rank == 0:
        for name in ("loss", "lr"):
            if name == "lr":
                break
        step += 1
        if step > 10:
            break
"""


@pytest.mark.parametrize(("model", "found"), [
    ("DDP(torch.nn.Linear(2, 2))", [20]),
    ("torch.nn.Linear(2, 2)", []),
])
def test_a_rank_break_out_of_a_loop_whose_backward_all_reduces(tmp_path: Path, model: str, found: list[int]) -> None:
    (tmp_path / "train.py").write_text(_SCRIPT.format(model=model))
    findings = [f for f in check_file(tmp_path / "train.py") if f.code == "DDP024"]
    assert [f.line for f in findings] == found
    assert all("loss.backward() (DDP's gradient all-reduce) at line 13" in f.message for f in findings)


_TRAINER = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = DDP(torch.nn.Linear(2, 2))

    def train_network(self, loader):
        for batch in loader:
            loss = self.encoder(batch).sum()
            {step}
        return 0.0
"""

_ECAPA = """
import sys
import torch.distributed as dist
from model import Model


def main(rank, max_epoch):
    dist.init_process_group("nccl")
    s = Model()
    epoch = 1
    while True:
        s.train_network(loader=[])
        if rank == 0:
            if epoch >= max_epoch:
                dist.destroy_process_group()
                {stop}
        epoch += 1
"""


@pytest.mark.parametrize(("step", "stop", "found"), [
    ("loss.backward()", "quit()", [16]),  # ECAPA-TDNN: rank 0 ends the process, the others train on and wait
    ("loss.backward()", "sys.exit(0)", [16]),
    ("print(loss)", "quit()", []),  # the method makes no backward: nothing the other ranks wait in
    ("loss.backward()", "sys.exit(1)", []),  # a crash: the launcher sees a failed rank and ends the job, no hang
])
def test_a_rank_exit_out_of_a_loop_whose_method_makes_the_backward(tmp_path: Path, step: str, stop: str,
                                                                   found: list[int]) -> None:
    (tmp_path / "model.py").write_text(_TRAINER.format(step=step))
    (tmp_path / "train.py").write_text(_ECAPA.format(stop=stop))
    findings = [f for f in check_file(tmp_path / "train.py") if f.code == "DDP024"]
    assert [f.line for f in findings] == found
    assert not [f for f in check_file(tmp_path / "train.py") if f.code == "DDP007"]  # it exits: no later collective
