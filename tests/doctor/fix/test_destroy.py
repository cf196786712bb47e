"""DDP007's fix: ``destroy_process_group()`` out of the loop, into a ``finally`` around what follows
``init_process_group`` (a ``finally`` added to a ``try`` that is there), else at the end of the function; refused,
with the reason, where neither can be written safely."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixcheck import fixed_by_cli
from support import run_cli


def test_the_destroy_moves_from_the_loop_into_a_finally_around_the_training(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = '''import torch.distributed as dist


def main(epochs, model):
    dist.init_process_group("gloo")
    # training
    for epoch in range(epochs):
        model.step()
        dist.destroy_process_group()  # done
    dist.barrier()
    return model
'''
    fixed = fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP007",
                         ["    for epoch in range(epochs):", "        model.step()",
                          "        dist.destroy_process_group()  # done", "    dist.barrier()", "    return model"],
                         ["    try:", "        for epoch in range(epochs):", "            model.step()",
                          "        dist.barrier()", "        return model", "    finally:",
                          "        dist.destroy_process_group()"])
    assert '    dist.init_process_group("gloo")\n    # training\n    try:\n' in fixed


def test_a_try_after_the_init_gets_the_destroy_in_its_finally(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = '''import torch.distributed as dist


def main(epochs, model):
    dist.init_process_group("gloo")
    try:
        for epoch in range(epochs):
            model.step()
            dist.destroy_process_group()
    except KeyboardInterrupt:
        print("stopped")
'''
    fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP007", ["            dist.destroy_process_group()"],
                 ["    finally:", "        dist.destroy_process_group()"])


def test_a_module_level_destroy_goes_into_a_finally_and_a_final_print_stays_inside(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = '''import torch.distributed as dist

dist.init_process_group("gloo")
for step in range(3):
    dist.barrier()
    dist.destroy_process_group()
print("done")
'''
    fixed = fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP007",
                         ["for step in range(3):", "    dist.barrier()", 'print("done")'],
                         ["try:", "    for step in range(3):", "        dist.barrier()", '    print("done")',
                          "finally:"])
    assert fixed.endswith('finally:\n    dist.destroy_process_group()\n')


def test_an_init_in_another_function_leaves_the_destroy_at_the_end_of_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = '''import torch.distributed as dist


def setup():
    dist.init_process_group("gloo")


def main(epochs):
    setup()
    for epoch in range(epochs):
        dist.barrier()
        dist.destroy_process_group()
    return 1
'''
    fixed = fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP007", ["        dist.destroy_process_group()"],
                         ["    dist.destroy_process_group()"])
    assert fixed.endswith("        dist.barrier()\n    dist.destroy_process_group()\n    return 1\n")


def test_a_module_level_init_under_a_condition_is_refused_with_the_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = '''import os

import torch.distributed as dist

if "RANK" in os.environ:
    dist.init_process_group("gloo")
for step in range(3):
    dist.barrier()
    dist.destroy_process_group()
'''
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(text, encoding="utf-8")
    rc, diff, err = run_cli(["doctor", "train.py", "--fix"], capsys)
    assert (rc, diff) == (0, "")
    assert ("train.py:9: DDP007 not fixed: init_process_group is under a condition or in a try in the module: a "
            "destroy that always runs would fail where no group was made") in err
    assert "train.py: nothing to fix" in err
