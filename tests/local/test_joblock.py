"""One resume of a job folder at a time: a second concurrent ``orch run --resume`` is refused, and the lock holds
while ``orch run`` runs. Folders come from one real ``orch run smoke`` (copied per test).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from support import ORCH, assert_refused, clean_environ, no_rank_started, resume

# --- one resume of a folder at a time ------------------------------------------------------------------

def test_a_second_concurrent_resume_is_refused(job_copy: Path) -> None:
    from orchestrator.local.joblock import job_lock

    with job_lock(job_copy):  # stands for a running orch run of this folder
        before = time.time()
        proc = resume(job_copy)
        assert_refused(proc, "in use by another orch run")
        assert no_rank_started(job_copy, before)
        saved = json.loads((job_copy / "job.json").read_text())
        assert saved["params"]["epochs"] == 1, "the refused resume changed job.json"
    proc = resume(job_copy)  # the lock is gone with its holder
    assert proc.returncode == 0, proc.stderr


def test_the_lock_holds_while_orch_run_runs(job_copy: Path) -> None:
    first = subprocess.Popen([ORCH, "run", "--resume", str(job_copy), "epochs=40", "samples=4096"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=clean_environ(PYTHONPATH=os.environ.get("PYTHONPATH", "")))
    try:
        log = job_copy / "logs" / "local-rank0.out"
        deadline = time.monotonic() + 120
        while "resuming" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
            time.sleep(0.2)
        second = resume(job_copy)
        assert_refused(second, "in use by another orch run")
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=120)
