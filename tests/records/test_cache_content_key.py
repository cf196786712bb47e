"""The parsed cluster.yaml is cached by its content, never by its size and times: an edit that keeps both
(``cp -p``, ``rsync -t``, ``tar x``: here the same length and ``os.utime`` back to the old times) reaches the
very next ``orch submit --dry-run`` (its ``#SBATCH --time``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import TEST_CLUSTER, cluster_file

from orchestrator.cli import main

if TYPE_CHECKING:
    from support import Stubs


def dry_run(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """A script (no resources of its own), so cluster.yaml's defaults.time is the job's ``--time``."""
    code = main(["submit", "train.py", "--cluster", str(path), "--dry-run"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out + err


def test_an_edit_keeping_size_and_mtime_reaches_the_dry_run(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           clean_env: pytest.MonkeyPatch, stubs: Stubs) -> None:
    cache = tmp_path / "cache"
    clean_env.setenv("ORCH_CACHE_DIR", str(cache))
    clean_env.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('training')\n", encoding="utf-8")
    path = cluster_file(tmp_path, defaults={**TEST_CLUSTER["defaults"], "time": "04:00:00"})
    assert "#SBATCH --time=04:00:00" in dry_run(path, capsys)
    assert list((cache / "parsed").iterdir()), "the parse was not cached: this test would prove nothing"
    before = os.stat(path)
    text = path.read_text(encoding="utf-8")
    edited = text.replace("time: 04:00:00", "time: 01:30:00").replace("time: '04:00:00'", "time: '01:30:00'")
    assert edited != text and len(edited) == len(text)
    path.write_text(edited, encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    out = dry_run(path, capsys)
    assert "#SBATCH --time=01:30:00" in out and "04:00:00" not in out.split("#SBATCH --time=")[1][:8], out
