"""A failed local run says its error once: the closing ``orch: error:`` line of ``orch run`` does not repeat
what the failed rank's own ``orch: error:`` line, shown just above it, already said (rank 0's output, or the
failed rank's last lines, both on stderr); ``--json``'s message keeps the whole cause. Where rank 0's output
went to stdout (no ``--json``) the closing line on stderr keeps the cause, so ``orch run ... 2>err`` has it
(tests/records/test_resumecheck_damaged.py and others read it there). A script's traceback is not such a
line: its closing line still names the exception (tests/task/test_scriptrun_errors.py).

The runs are made once per session (tests/local/sharedlocal.py) and read by other modules too: rank 1's raise at
its step 3 is test_runner.py's failing-rank run, rank 0's at its step 40 (in epoch 2) test_runner_dying_ranks.py's.
"""

from __future__ import annotations

import json

import pytest
from local import sharedlocal

# the fault's rank -> its step, and the cause the rank's error line says
FAULT_STEP = {0: 40, 1: 3}
CAUSE = {0: "RuntimeError: injected failure on rank 0 at step 40 (job faulty, epoch 2, step 7)",
         1: "RuntimeError: injected failure on rank 1 at step 3 (job faulty, epoch 1, step 2)"}


@pytest.mark.slow
@pytest.mark.parametrize("rank", [0, 1])
def test_a_failed_run_prints_its_error_once(rank: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    proc = sharedlocal.faulty_failure(tmp_path_factory, "raise", rank, FAULT_STEP[rank])["proc"]
    assert proc.returncode == 1, proc.stderr[-3000:]
    cause = CAUSE[rank]
    assert proc.stderr.count(cause) == 1, proc.stderr[-3000:]  # the rank's own line (and no repeat)
    assert f"orch: error: rank {rank} failed: {cause}" in proc.stderr
    [closing] = [line for line in proc.stderr.splitlines() if line.startswith(f"orch: error: rank {rank} exited")]
    assert closing.startswith(f"orch: error: rank {rank} exited with code 1 (its error is above)"), closing
    assert cause in json.loads(proc.stdout)["message"]  # the summary keeps the whole cause
