"""A failed local run says its error once: the closing ``orch: error:`` line of ``orch run`` does not repeat
what the failed rank's own ``orch: error:`` line, shown just above it, already said (rank 0's output, or the
failed rank's last lines, both on stderr); ``--json``'s message keeps the whole cause. Where rank 0's output
went to stdout (no ``--json``) the closing line on stderr keeps the cause, so ``orch run ... 2>err`` has it
(tests/records/test_resumecheck_damaged.py and others read it there). A script's traceback is not such a
line: its closing line still names the exception (tests/task/test_scriptrun_errors.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support import ORCH, TESTS, clean_environ

FAULTY = str(TESTS / "jobs" / "faulty.py")
CAUSE = "RuntimeError: injected failure on rank {rank} at step 3 (job faulty, epoch 1, step 2)"


@pytest.mark.slow
@pytest.mark.parametrize("rank", [0, 1])
def test_a_failed_run_prints_its_error_once(rank: int, tmp_path: Path) -> None:
    proc = subprocess.run([ORCH, "run", FAULTY, "--nproc", "2", "--cpu", "--job-root", str(tmp_path), "--json",
                           "fault=raise", f"fault_rank={rank}", "epochs=1", "checkpoint=false"],
                          capture_output=True, text=True, timeout=300, env=clean_environ(), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]
    cause = CAUSE.format(rank=rank)
    assert proc.stderr.count(cause) == 1, proc.stderr[-3000:]  # the rank's own line (and no repeat)
    assert f"orch: error: rank {rank} failed: {cause}" in proc.stderr
    [closing] = [line for line in proc.stderr.splitlines() if line.startswith(f"orch: error: rank {rank} exited")]
    assert closing.startswith(f"orch: error: rank {rank} exited with code 1 (its error is above)"), closing
    assert cause in json.loads(proc.stdout)["message"]  # the summary keeps the whole cause
