"""DDP017 in a helper module the script runs (its engine's ``train_one_epoch``): the script wraps the model in DDP
and hands it over; a forward through ``model.module`` in the helper's training loop bypasses the wrapper there too.
Silent where the helper only saves through ``.module``, and where the script wraps nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

_ENGINE = """
import torch


def train_one_epoch(model, optimizer, loader):
    for batch, target in loader:
        {step}
        loss = torch.nn.functional.mse_loss(out, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.save(model.module.state_dict(), "last.pt")
"""

_SCRIPT = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from engine import train_one_epoch

dist.init_process_group("nccl")
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
model = {model}
train_one_epoch(model, torch.optim.SGD(model.parameters(), lr=0.1), [])
"""


@pytest.mark.parametrize(("step", "model", "found"), [
    ("out = model.module(batch.cuda())", "DDP(torch.nn.Linear(8, 1).cuda(), device_ids=[local_rank])", [7]),
    ("out = model(batch.cuda())", "DDP(torch.nn.Linear(8, 1).cuda(), device_ids=[local_rank])", []),
    ("out = model.module(batch.cuda())", "torch.nn.Linear(8, 1).cuda()", []),  # nothing wrapped
    # wespeaker's margin head: the wrapper's own forward runs in the same step, so DDP's reducer is prepared and the
    # head's parameters (the wrapper's too) are averaged in the same backward
    ("out = model.module.projection(model(batch.cuda()), target)",
     "DDP(torch.nn.Linear(8, 1).cuda(), device_ids=[local_rank])", []),
    ("out = model.module.projection(batch.cuda(), target)",
     "DDP(torch.nn.Linear(8, 1).cuda(), device_ids=[local_rank])", [7]),
    # OpenUnReID's pseudo-label step: a set-up method of the unwrapped module, no forward
    ("model.module.initialize_centers(batch, target); out = batch.cuda()",
     "DDP(torch.nn.Linear(8, 1).cuda(), device_ids=[local_rank])", []),
    # simple-ijepa's EMA step: the target encoder's weights moved towards the trained ones, no forward
    ("model.module.update_params(0.99); out = batch.cuda()",
     "DDP(torch.nn.Linear(8, 1).cuda(), device_ids=[local_rank])", []),
    # sslsv's epoch hooks of the unwrapped module (on_train_epoch_start(epoch, max_epochs)): bookkeeping, no forward
    ("model.module.on_train_epoch_start(3, 10); out = batch.cuda()",
     "DDP(torch.nn.Linear(8, 1).cuda(), device_ids=[local_rank])", []),
])
def test_a_forward_around_the_wrapper_in_a_helpers_training_loop(tmp_path: Path, step: str, model: str,
                                                                  found: list[int]) -> None:
    (tmp_path / "engine.py").write_text(_ENGINE.format(step=step))
    (tmp_path / "train.py").write_text(_SCRIPT.format(model=model))
    findings = check_file(tmp_path / "train.py")
    assert [f.line for f in findings if f.code == "DDP017" and f.file.endswith("engine.py")] == found


_ENGINE_SIDES = """
import torch


def train_one_epoch(model, optimizer, loader, parallel=True, train=True):
    for batch, target in loader:
        net = {pick}
        out = net(batch.cuda())
        loss = torch.nn.functional.mse_loss(out, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


@pytest.mark.parametrize(("pick", "found"), [
    ("model.module if parallel else model", [8]),
    ("model.module if parallel and not train else model", []),  # NeuralForceField's call_model: evaluation only
    ("model if train else model.module", []),
    ("model if train or not parallel else model.module", []),
    ("model.module if not parallel or train else model", [8]),  # taken while training
])
def test_a_module_picked_only_while_not_training_is_no_training_forward(tmp_path: Path, pick: str,
                                                                         found: list[int]) -> None:
    (tmp_path / "engine.py").write_text(_ENGINE_SIDES.format(pick=pick))
    wrapped = "DDP(torch.nn.Linear(8, 1).cuda(), device_ids=[local_rank])"
    (tmp_path / "train.py").write_text(_SCRIPT.format(model=wrapped))
    findings = check_file(tmp_path / "train.py")
    assert [f.line for f in findings if f.code == "DDP017" and f.file.endswith("engine.py")] == found
