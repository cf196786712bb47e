"""DDP006's fix: a save every rank runs to one path goes under ``if dist.get_rank() == 0:``, then a barrier."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixcheck import fixed_by_cli
from support import run_cli

HEAD = '''import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(epochs):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(2, 2))
    for epoch in range(epochs):
        model(torch.ones(1, 2)).sum().backward()
'''


def test_the_save_is_guarded_by_rank_0_and_followed_by_a_barrier(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = HEAD + '''
        # the latest weights
        torch.save(model.module.state_dict(), "last.pt")  # overwritten each epoch
    print("done")
'''
    fixed = fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP006",
                         ['        torch.save(model.module.state_dict(), "last.pt")  # overwritten each epoch'],
                         ['        if dist.get_rank() == 0:',
                          '            torch.save(model.module.state_dict(), "last.pt")  # overwritten each epoch',
                          '        dist.barrier()'])
    assert "backward()\n\n        # the latest weights\n        if dist.get_rank() == 0:" in fixed


def test_the_wrapper_saved_is_not_a_rank_guard_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(HEAD + '''    if dist.get_rank() == 0:
        torch.save(model.state_dict(), "last.pt")
''', encoding="utf-8")
    rc, out, err = run_cli(["doctor", "train.py", "--fix"], capsys)
    assert (rc, out) == (0, "")
    assert "DDP006 not fixed" in err


def test_a_save_by_local_rank_0_of_every_node_is_narrowed_to_global_rank_0_without_a_barrier(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = '''import os

import torch
import torch.distributed as dist

local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("gloo")
model = torch.nn.Linear(2, 2)
if local_rank == 0:
    torch.save(model.state_dict(), "ckpt.pt")
'''
    fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP006", ['    torch.save(model.state_dict(), "ckpt.pt")'],
                 ["    if not dist.is_initialized() or dist.get_rank() == 0:",
                  '        torch.save(model.state_dict(), "ckpt.pt")'])
