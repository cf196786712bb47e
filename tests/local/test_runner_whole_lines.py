"""Every line a rank prints arrives whole in its log: ``orch run`` of a per-node script (tests/scripts/
spawn_chatter.py: one task, two processes of its own ``mp.spawn`` sharing the task's stdout and stderr) whose
processes print many lines, each ``print`` of several parts, at the same moment. Each line reaches the
descriptor as one write (line buffering, passed on to the spawned processes), so no line is cut by another's.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from support import ORCH, ROOT, clean_environ

pytestmark = pytest.mark.slow

SCRIPT = ROOT / "tests" / "scripts" / "spawn_chatter.py"
LINES = 3000  # per process
PAD = 40
WHOLE = re.compile(rb"CHATTER (out|err) rank ([01]) line (\d+) x{%d}" % PAD)
TIMEOUT = 240


def chatter_lines(log: bytes) -> tuple[list[bytes], list[bytes]]:
    """The log's chatter lines: those whole, and those cut or glued (any other line that mentions it)."""
    lines = log.split(b"\n")
    whole = [line for line in lines if WHOLE.fullmatch(line)]
    broken = [line for line in lines if b"CHATTER" in line and not WHOLE.fullmatch(line)]
    return whole, broken


def test_two_spawned_processes_sharing_a_rank_log_never_cut_each_others_lines(tmp_path: Path) -> None:
    env = clean_environ(PYTHONPATH=str(ROOT))
    env.pop("OMP_NUM_THREADS", None)
    env.pop("PYTHONUNBUFFERED", None)  # orch's own setting, not the environment's (tests/task/test_lines.py: with it)
    jobs = tmp_path / "jobs"
    proc = subprocess.run([ORCH, "run", str(SCRIPT), "--nproc", "2", "--job-root", str(jobs), "--", "-n",
                           "{nnodes}", "-g", "{nproc_per_node}", "-nr", "{node_rank}", "--lines", str(LINES),
                           "--pad", str(PAD)], cwd=tmp_path, env=env, capture_output=True, timeout=TIMEOUT,
                          check=False)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    [job_dir] = [p for p in jobs.iterdir() if (p / "job.json").is_file()]
    log = (job_dir / "logs" / "local-rank0.out").read_bytes()
    whole, broken = chatter_lines(log)
    assert not broken, b"\n".join(broken[:10]).decode(errors="replace")
    assert len(whole) == 2 * LINES
    seen = {(m.group(2), int(m.group(3))) for m in map(WHOLE.fullmatch, whole) if m is not None}
    assert seen == {(rank, i) for rank in (b"0", b"1") for i in range(LINES)}
    assert b"\n\n" not in log  # no newline left behind by a line cut in two
