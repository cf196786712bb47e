"""A rank that does not answer SIGTERM (it ignores the signal at C level and blocks in native code:
tests/scripts/hang_unanswered.py) under ``orch run --nproc 2 --collective-timeout 5``, for real: faulthandler
never runs in it, so before orch run kills it py-spy reads its stack (records/pyspy.py), and the run names it with
its file:line. Skipped where py-spy is not installed (``pip install 'orch[stacks]'``)."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from support import ORCH, ROOT, clean_environ

from orchestrator.records import pyspy
from orchestrator.records.stacks import places_path
from orchestrator.spec.runconfig import LOG_DIR

pytestmark = pytest.mark.slow

SCRIPT = ROOT / "tests" / "scripts" / "hang_unanswered.py"
TIMEOUT_S = 5
MARGIN_S = 15


def _line(code: str) -> int:
    """The last line of the script with this code (the mutex is locked twice: the second lock blocks)."""
    return [n for n, line in enumerate(SCRIPT.read_text(encoding="utf-8").splitlines(), 1) if line.strip() == code][-1]


def test_a_rank_that_does_not_answer_is_read_by_py_spy_and_named(tmp_path: Path) -> None:
    if pyspy.find() is None:
        pytest.skip("py-spy is not installed (pip install 'orch[stacks]')")
    jobs = tmp_path / "jobs"
    argv = [ORCH, "run", str(SCRIPT), "--nproc", "2", "--job-root", str(jobs), "--collective-timeout", str(TIMEOUT_S),
            "--max-restarts", "0"]
    proc = subprocess.run(argv, cwd=tmp_path, env=clean_environ(PYTHONPATH=str(ROOT)), capture_output=True, text=True,
                          timeout=120, check=False)
    ended = time.time()
    assert proc.returncode != 0, proc.stderr
    [job_dir] = [p for p in jobs.iterdir() if (p / "job.json").is_file()]
    log = (job_dir / LOG_DIR / "local-rank1.out").read_text(encoding="utf-8", errors="replace")
    assert "Current thread" not in log and "Thread 0x" not in log, log  # faulthandler never ran in it
    assert pyspy.dump_path(job_dir, 1).is_file()
    expected = (f"rank 1 stopped at hang_unanswered.py:{_line('libc.pthread_mutex_lock(mutex)')} in block_unanswered "
                f"(libc.pthread_mutex_lock) while rank 0 waited in all_reduce at "
                f"hang_unanswered.py:{_line('dist.all_reduce(value)')} in <module> (dist.all_reduce)")
    assert json.loads(places_path(job_dir).read_text())["culprit"] == expected
    assert f"orch: error: {expected}; " in proc.stderr, proc.stderr
    hung = float(re.findall(r"rank 1 hung at ([0-9.]+)", log)[0])
    assert ended - hung <= TIMEOUT_S + MARGIN_S
    pid = json.loads((job_dir / LOG_DIR / "rank1.outcome.json").read_text())["pid"]
    try:  # no process left: the rank's pid is gone, or another process's now
        alive = str(job_dir) in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        alive = False
    assert not alive
