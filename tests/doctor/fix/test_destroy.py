"""DDP007's fix: ``destroy_process_group()`` out of the loop, at the end of its function."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixcheck import fixed_by_cli


def test_the_destroy_moves_from_the_loop_to_the_end_of_the_function(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = '''import torch.distributed as dist


def main(epochs, model):
    dist.init_process_group("gloo")
    for epoch in range(epochs):
        model.step()
        dist.destroy_process_group()  # done
    dist.barrier()
    return model
'''
    fixed = fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP007",
                         ["        dist.destroy_process_group()  # done"], ["    dist.destroy_process_group()"])
    assert fixed.endswith("    dist.barrier()\n    dist.destroy_process_group()\n    return model\n")
