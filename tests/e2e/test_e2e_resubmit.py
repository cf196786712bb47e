"""End to end on the local Slurm cluster: ``orch resubmit SWEEP --failed`` on a 4-element sweep whose elements
1 and 3 fail in their first run; exactly those two are queued again, each resumes in its own folder from the
checkpoint of its first epoch, and the sweep ends with all 4 COMPLETED.

The failure is tests/jobs/faulty.py's ``fault=raise`` at training forward pass 6 of the process (counted from 0,
the bucket-settling pass first; 4 steps an epoch: in epoch 2), after the checkpoint of epoch 1. A run that resumes
at epoch 2 makes only 1 + 4 passes, so it never gets there: an element completes only if it resumed (one that
started over would fail again). Checked by hand with ``orch run`` and ``orch run --resume`` of the same job.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

FAULTY = Path(__file__).resolve().parents[1] / "jobs" / "faulty.py"
# one rank, 64 samples of batch 16: 4 steps an epoch; the fault at pass 6 is in epoch 2
JOB = ["--nodes", "1", "--gpus", "1", "--cpus-per-task", "1", "--max-restarts", "0", "epochs=2", "samples=64",
       "test_samples=16", "fault_rank=0", "fault_step=6"]
SWEEP = ["--sweep", "seed=0,1", "--sweep", "fault=none,raise"]  # elements 1 and 3 raise


def test_resubmit_failed_runs_only_the_failed_elements_and_they_resume(slurm_cluster: SlurmCluster) -> None:
    cluster = slurm_cluster
    where = ["--cluster", str(cluster.cluster_yaml)]
    array_id, folder = cluster.submit(str(FAULTY), *JOB, *SWEEP)
    first = [f"{array_id}_{i}" for i in range(4)]
    states = {job_id: cluster.wait_done(job_id, job_dir=folder / job_id[-1])["state"] for job_id in first}
    assert states == dict(zip(first, ["COMPLETED", "FAILED", "COMPLETED", "FAILED"], strict=True)), states
    assert all((folder / str(i) / "checkpoints" / "latest.pt").is_file() for i in (1, 3))  # epoch 1's

    proc = cluster.orch("resubmit", array_id, "--failed", "--json", *where, check=True)
    again = json.loads(proc.stdout)
    new_id = again["job_id"]
    assert again["array"] == "1,3" and [e["index"] for e in again["elements"]] == [1, 3]
    assert [e["job_dir"] for e in again["elements"]] == [str(folder / "1"), str(folder / "3")]
    for index in (1, 3):
        status = cluster.wait_done(f"{new_id}_{index}", job_dir=folder / str(index))
        assert status["state"] == "COMPLETED", cluster.describe(folder / str(index))
        rank0 = cluster.orch("logs", f"{new_id}_{index}", "--rank", "0", *where, check=True).stdout
        assert "resuming from checkpoint at epoch 2" in rank0, rank0

    rows = json.loads(cluster.orch("status", array_id, "--json", *where, check=True).stdout)
    assert [(r["job_id"], r["state"]) for r in rows] == [
        (f"{array_id}_0", "COMPLETED"), (f"{new_id}_1", "COMPLETED"), (f"{array_id}_2", "COMPLETED"),
        (f"{new_id}_3", "COMPLETED")], rows
    compared = json.loads(cluster.orch("compare", new_id, "--json", *where, check=True).stdout)["runs"]
    assert sorted(r["job_id"] for r in compared) == sorted(r["job_id"] for r in rows)
    assert all(r["completed"] for r in compared)
    refused = cluster.orch("resubmit", array_id, "--failed", *where)
    assert refused.returncode == 2 and "no element of sweep" in refused.stderr and "HINT:" in refused.stderr
