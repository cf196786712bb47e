"""A requeued job whose resume folder is damaged fails in its batch script, before srun:
the checkpoint's sidecar names another job, so the batch log holds the error and no task starts."""

from __future__ import annotations

import hashlib
import json
import time
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SMOKE_FAST = ["epochs=1", "samples=256", "test_samples=64", "--cpus-per-task", "1"]


def test_a_requeued_job_with_another_jobs_checkpoint_stops_before_srun(slurm_cluster: SlurmCluster) -> None:
    job_id, job_dir = slurm_cluster.submit("smoke", "--nodes", "1", "--gpus", "1", *SMOKE_FAST)
    first = slurm_cluster.wait_done(job_id, 180, job_dir)
    assert first["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    sidecar = job_dir / "checkpoints" / "latest.pt.json"
    data = json.loads(sidecar.read_text())
    data["job"] = "other"  # as orch would have written it for a job named "other"
    data["job_digest"] = hashlib.sha256(json.dumps(["other", data["job_file"]]).encode()).hexdigest()
    sidecar.write_text(json.dumps(data))
    rank_log = job_dir / "logs" / f"{job_id}-rank0.out"
    before = rank_log.read_text()
    try:
        assert slurm_cluster.client("scontrol", "requeue", job_id).returncode == 0
        deadline = time.monotonic() + 300
        batch_log = job_dir / "logs" / f"slurm-{job_id}.out"
        started_soon = False
        while "was written by job 'other'" not in (batch_log.read_text() if batch_log.exists() else ""):
            assert time.monotonic() < deadline, f"{slurm_cluster.status(job_id)}\n{slurm_cluster.describe(job_dir)}"
            # no 120 s BeginTime wait (refused until the requeued job is pending again: retried). now+2, not
            # now: a start in the second of the requeue is killed by slurmd ("Job credential revoked")
            if not started_soon:
                started_soon = slurm_cluster.client("scontrol", "update", f"JobId={job_id}",
                                                    "StartTime=now+2").returncode == 0
            time.sleep(1)
        second = slurm_cluster.wait_done(job_id, 120, job_dir)
    finally:
        slurm_cluster.client("scancel", job_id)
    text = batch_log.read_text()
    assert "orch: error: the checkpoint" in text and "HINT: resume the job that wrote it" in text, text
    assert "Traceback" not in text and "rank ?" not in text
    assert second["state"] == "FAILED", second
    assert rank_log.read_text() == before, "a task started after the requeue"
