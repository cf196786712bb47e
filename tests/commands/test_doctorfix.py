"""``orch doctor FILE --fix [--write]``: the diff on stdout and nothing written, or the script fixed in place with
the original kept and named; the refusals (``--write`` alone, ``--fix --json``, a script that cannot be read)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import run_cli

SCRIPT = '''import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def train(data, model):
    dist.init_process_group("gloo")
    sampler = DistributedSampler(data)
    for epoch in range(3):
        for x in DataLoader(data, sampler=sampler):
            model(x).sum().backward()
'''


def test_fix_write_fixes_in_place_and_names_the_original(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SCRIPT, encoding="utf-8")
    rc, out, err = run_cli(["doctor", "train.py", "--fix", "--write"], capsys)
    assert rc == 0, err
    assert "+        sampler.set_epoch(epoch)" in out
    assert "train.py: fixed DDP004 (line 8); the original is in train.py.orig" in err
    assert (tmp_path / "train.py.orig").read_text(encoding="utf-8") == SCRIPT
    assert "        sampler.set_epoch(epoch)\n        for x in" in (tmp_path / "train.py").read_text(encoding="utf-8")
    rc, out, err = run_cli(["doctor", "train.py"], capsys)
    assert (rc, out.strip()) == (0, "orch doctor: no findings")


def test_fix_prints_and_writes_nothing_and_a_folder_is_fixed_file_by_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text(SCRIPT, encoding="utf-8")
    (tmp_path / "src" / "b.py").write_text("print('clean')\n", encoding="utf-8")
    rc, out, err = run_cli(["doctor", "src", "--fix"], capsys)
    assert rc == 0, err
    assert out.startswith("--- src/a.py\n+++ src/a.py\n")
    assert "src/a.py: fixes DDP004 (line 8); apply them with --fix --write" in err
    assert "src/b.py: nothing to fix" in err
    assert sorted(p.name for p in (tmp_path / "src").iterdir()) == ["a.py", "b.py"]


@pytest.mark.parametrize(("argv", "said"), [
    (["--write"], "--write applies --fix's diff"),
    (["--fix", "--json"], "--fix prints a diff, not JSON"),
])
def test_refused_combinations_name_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                           said: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    rc, _, err = run_cli(["doctor", str(script), *argv], capsys)
    assert rc == 2 and said in err and "HINT: orch doctor FILE --fix" in err
    assert script.read_text(encoding="utf-8") == SCRIPT


def test_a_file_that_cannot_be_parsed_exits_2_and_the_others_are_still_fixed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text("def (:\n", encoding="utf-8")
    (tmp_path / "train.py").write_text(SCRIPT, encoding="utf-8")
    rc, out, err = run_cli(["doctor", "bad.py", "train.py", "--fix"], capsys)
    assert rc == 2 and "bad.py:1" in err and "HINT:" in err
    assert "+        sampler.set_epoch(epoch)" in out
