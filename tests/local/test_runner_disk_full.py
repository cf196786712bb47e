"""A disk that fills up under ``orch run`` (a 2 MiB tmpfs as the job root; root only): rank 0's log stops, the
rank is never left blocked on its pipe, and orch run ends with one error naming the log and the fix, never a
thread's traceback or a hang. Real ``orch`` processes."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import ORCH, clean_environ

TIMEOUT = 90


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "small"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr!r}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_disk_under_the_rank_log_is_one_error(small_disk: Path, tmp_path: Path) -> None:
    script = tmp_path / "chatty_train.py"
    script.write_text("for i in range(300):\n    print('log line', i, 'y' * 15000, flush=True)\nprint('the end')\n",
                      encoding="utf-8")
    proc = subprocess.run([ORCH, "run", str(script), "--job-root", str(small_disk / "jobs")], capture_output=True,
                          text=True, timeout=TIMEOUT, env=clean_environ(), cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 2, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-2:]
    assert last[0].startswith("orch: error: cannot write ") and "local-rank0.out" in last[0], last
    assert "No space left on device" in last[0], last
    assert last[1].startswith("HINT: free space on") and "--job-root" in last[1], last
    assert "the end" in proc.stdout  # the rank ran to its end: its output was drained, not left blocking
