"""A script's stuck rank under ``orch run``, for real (2 gloo ranks, tests/scripts/stuck_rank.py: rank 1 sleeps
before an all_reduce rank 0 waits in): the run ends within the collective timeout of the hang (+15 s), non-zero,
whether the timeout is orch's (``--collective-timeout``, the script passes none) or the script's own
``timeout=``; the terminal shows the user's frames, never orch's launcher frames (those stay in the logs)."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest
from support import ORCH, ROOT, clean_environ

from orchestrator.spec.runconfig import LOG_DIR

pytestmark = pytest.mark.slow

STUCK = ROOT / "tests" / "scripts" / "stuck_rank.py"
SLEEP_LINE = next(n for n, line in enumerate(STUCK.read_text(encoding="utf-8").splitlines(), 1)
                  if "time.sleep(args.sleep)" in line)
TIMEOUT_S = 5
MARGIN_S = 15  # from the hang to the run's end, on top of the timeout
CAP_S = 120  # without a bound the run would wait torch's 30 minutes: the test stops it here
LAUNCHER_FRAME = re.compile(r'File "[^"]*(orchestrator/|<frozen runpy>)')


def _run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float, Path]:
    jobs = tmp_path / "jobs"
    proc = subprocess.run([ORCH, "run", str(STUCK), "--nproc", "2", "--job-root", str(jobs), *args],
                          cwd=tmp_path, env=clean_environ(PYTHONPATH=str(ROOT)), capture_output=True, text=True,
                          timeout=CAP_S, check=False)
    ended = time.time()
    [job_dir] = [p for p in jobs.iterdir() if (p / "job.json").is_file()]
    return proc, ended, job_dir


def _hang_to_end(job_dir: Path, ended: float) -> float:
    log = (job_dir / LOG_DIR / "local-rank1.out").read_text(encoding="utf-8")
    stuck = float(re.search(r"rank 1 stuck at ([0-9.]+)", log).group(1))  # type: ignore[union-attr]
    return ended - stuck


def test_a_script_without_a_timeout_ends_within_the_collective_timeout(tmp_path: Path) -> None:
    proc, ended, job_dir = _run(tmp_path, "--collective-timeout", str(TIMEOUT_S))
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert _hang_to_end(job_dir, ended) <= TIMEOUT_S + MARGIN_S
    assert f"timed out after {TIMEOUT_S} s" in proc.stderr
    assert "rank 1 stopped making progress" in proc.stderr  # blamed: the rank that stopped


def test_the_terminal_shows_the_users_frames_and_the_logs_keep_the_launchers(tmp_path: Path) -> None:
    proc, ended, job_dir = _run(tmp_path, "--", "--timeout", str(TIMEOUT_S))  # the script's own timeout=
    terminal = proc.stdout + proc.stderr
    assert proc.returncode != 0, terminal
    assert _hang_to_end(job_dir, ended) <= TIMEOUT_S + MARGIN_S
    assert not LAUNCHER_FRAME.search(terminal), terminal
    assert f'stuck_rank.py", line {SLEEP_LINE} in main' in terminal  # where rank 1 stopped: the user's line
    assert "dist.all_reduce(total)" in terminal  # rank 0's own traceback
    rank0 = (job_dir / LOG_DIR / "local-rank0.out").read_text(encoding="utf-8")
    assert LAUNCHER_FRAME.search(rank0)  # the stacks went to the log
