"""DDP024 at a ``break`` under a flag that only a rank condition sets (an early stop decided on rank 0: ``if rank ==
0: ... should_stop = True``, then ``if should_stop: break`` on every rank): rank 0 leaves while the others wait in
the next step's collective. Silent where the flag is shared (broadcast, or read back from a broadcast tensor on every
rank), where every rank sets it, and where the loop makes no collective."""

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
rank = int(os.environ["RANK"])
model = DDP(torch.nn.Linear(2, 2))
should_stop = False
stale = 0
for epoch in range(100):
    loss = model(torch.ones(2)).sum()
    loss.backward()
    if rank == 0:
        stale += 1
        if stale > 5:
            should_stop = True
{shared}
    if should_stop:
        break
"""

_BROADCAST = """    flag = [should_stop]
    dist.broadcast_object_list(flag, src=0)
    should_stop = flag[0]"""


@pytest.mark.parametrize(("shared", "found"), [
    ("", True),
    (_BROADCAST, False),
    ("    dist.broadcast_object_list([should_stop], src=0)", False),
    ("    should_stop = should_stop or epoch > 50", False),  # set on every rank too
])
def test_a_break_under_a_flag_set_on_rank_zero_only(tmp_path: Path, shared: str, found: bool) -> None:
    text = _SCRIPT.format(shared=shared)
    (tmp_path / "train.py").write_text(text)
    findings = [f for f in check_file(tmp_path / "train.py") if f.code == "DDP024"]
    at = text.splitlines().index("        break") + 1
    assert [f.line for f in findings] == ([at] if found else [])
    for f in findings:
        assert "`should_stop = True` at line 18 under a rank condition" in f.message
        assert "loss.backward() (DDP's gradient all-reduce) at line 14" in f.message


def test_a_flag_loop_without_a_collective_is_silent(tmp_path: Path) -> None:
    text = _SCRIPT.format(shared="").replace("model = DDP(torch.nn.Linear(2, 2))", "model = torch.nn.Linear(2, 2)")
    (tmp_path / "train.py").write_text(text)
    assert [f for f in check_file(tmp_path / "train.py") if f.code == "DDP024"] == []


def test_a_shared_objects_value_is_not_a_rank_flag(tmp_path: Path) -> None:
    """``end_train.value = True`` on rank 0: a ``multiprocessing.Value`` the node's processes share."""
    text = _SCRIPT.format(shared="").replace("should_stop = True", "end_train.value = True").replace(
        "if should_stop:", "if end_train.value:")
    (tmp_path / "train.py").write_text(text)
    assert [f for f in check_file(tmp_path / "train.py") if f.code == "DDP024"] == []


_HELPER = """
import torch.distributed as dist


def is_main():
    return dist.get_rank() == 0


def share(value):
    if not dist.is_initialized():
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def dev_break(enabled, loss):
    if not enabled:
        return False
    stop = False
    if is_main():
        print("loss", loss)
        stop = True
    return {returned}
"""

_LOOP = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from helpers import dev_break

dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(2, 2))
for step in range(10):
    loss = model(torch.ones(2)).sum()
    loss.backward()
    if dev_break(True, loss.item()):
        break
"""


@pytest.mark.parametrize(("returned", "found"), [("stop", True), ("share(stop)", False)])
def test_a_helper_that_broadcasts_its_answer_is_no_rank_test(tmp_path: Path, returned: str, found: bool) -> None:
    """ecg_encoder's ``train_dev_break``: set on the main process, then ``return broadcast_value(should_break)``:
    every rank gets rank 0's answer and leaves the loop together; returned as is, only rank 0 leaves."""
    (tmp_path / "helpers.py").write_text(_HELPER.format(returned=returned))
    (tmp_path / "train.py").write_text(_LOOP)
    findings = [f for f in check_file(tmp_path / "train.py") if f.code == "DDP024"]
    assert [f.line for f in findings] == ([13] if found else [])
