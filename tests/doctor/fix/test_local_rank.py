"""DDP015's fix: the local rank from ``LOCAL_RANK`` (orch and torchrun set it) before the ``--local_rank`` flag."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixcheck import fixed_by_cli

from orchestrator.launchstyles import detect, read


def test_the_parsed_flag_is_overridden_by_the_environment_and_the_launch_style_is_torchruns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = '''import argparse

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local-rank", type=int, default=-1)
    args, rest = parser.parse_known_args()
    if args.local_rank != -1:
        torch.distributed.init_process_group("gloo")
'''
    fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP015", [],
                 ["import os", '    args.local_rank = int(os.environ.get("LOCAL_RANK", args.local_rank))'])
    assert detect(read(tmp_path / "train.py")).style == "env"  # orch starts it as torchrun would


def test_a_parser_that_returns_the_parsed_arguments_keeps_returning_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = '''import argparse
import os

import torch


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)
    return parser.parse_args()


def main():
    args = get_args()
    torch.distributed.init_process_group("nccl")
    torch.cuda.set_device(args.local_rank)
'''
    fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP015", ["    return parser.parse_args()"],
                 ["    args = parser.parse_args()",
                  '    args.local_rank = int(os.environ.get("LOCAL_RANK", args.local_rank))',
                  "    return args"])
