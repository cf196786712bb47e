"""DDP001's fix: ``torch.cuda.set_device(local_rank)`` before ``init_process_group``. A missing set_device is a
possible finding (orch's launcher binds the device): fixed with ``--all``, as it is shown."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixcheck import fixed_by_cli


def test_the_device_is_bound_from_the_local_rank_variable_before_init(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = '''import os

import torch
import torch.distributed as dist


def main():
    local_rank = int(os.environ["LOCAL_RANK"])

    # join the others
    dist.init_process_group("nccl")
    model = torch.nn.Linear(2, 2).cuda()
'''
    fixed = fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP001", [],
                         ["    torch.cuda.set_device(local_rank)"], flags=("--all",))
    assert "\n\n    torch.cuda.set_device(local_rank)\n    # join the others\n" in fixed


def test_without_a_local_rank_variable_the_environment_is_read_and_os_imported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = '''"""Train."""
import torch
import torch.distributed as dist

dist.init_process_group(backend="nccl")
model = torch.nn.Linear(2, 2).cuda()
'''
    fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP001", [],
                 ["import os", 'torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))'], flags=("--all",))


def test_a_possible_finding_is_not_fixed_without_all_and_that_is_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from support import run_cli

    monkeypatch.chdir(tmp_path)
    text = ("import torch\nimport torch.distributed as dist\n\ndist.init_process_group('nccl')\n"
            "m = torch.nn.Linear(2, 2).cuda()\n")
    (tmp_path / "train.py").write_text(text, encoding="utf-8")
    rc, out, err = run_cli(["doctor", "train.py", "--fix"], capsys)
    assert (rc, out) == (0, "")
    assert "train.py: 1 possible finding(s) not fixed (--all shows them; --fix --all fixes them too)" in err
    assert "train.py: nothing to fix" in err


def test_a_script_with_a_cpu_path_binds_the_device_only_when_there_is_a_gpu(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = '''import os

import torch
import torch.distributed as dist

local_rank = int(os.environ["LOCAL_RANK"])
device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
model = torch.nn.Linear(2, 2).to(device)
'''
    fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP001", [],
                 ["if torch.cuda.is_available():", "    torch.cuda.set_device(local_rank)"], flags=("--all",))
