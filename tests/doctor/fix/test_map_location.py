"""DDP009's fix: ``map_location="cpu"`` on a checkpoint's ``torch.load``."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixcheck import fixed_by_cli

HEAD = '''import os

import torch
import torch.distributed as dist


def main(path):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = torch.nn.Linear(2, 2).cuda()
'''


def test_the_load_gets_map_location_and_keeps_its_arguments(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = HEAD + '''    state = torch.load(path,  weights_only=True)  # the checkpoint
    model.load_state_dict(state)
'''
    fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP009",
                 ["    state = torch.load(path,  weights_only=True)  # the checkpoint"],
                 ['    state = torch.load(path,  weights_only=True, map_location="cpu")  # the checkpoint'])


def test_a_load_spread_over_lines_with_a_trailing_comma_keeps_its_layout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = HEAD + '''    model.load_state_dict(torch.load(
        os.path.join(path, "model_checkpoint.pt"),
    ))
'''
    fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP009",
                 ['        os.path.join(path, "model_checkpoint.pt"),'],
                 ['        os.path.join(path, "model_checkpoint.pt"), map_location="cpu",'])
