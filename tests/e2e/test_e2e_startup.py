"""End to end on the local Slurm cluster: every job records where its start-up time went
(``result.json``'s ``startup``) and ``orch status JOB`` shows the breakdown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from orchestrator.records.startup import PHASES

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def test_startup_phases_in_result_json_and_status(slurm_cluster: SlurmCluster,
                                                  smoke_reference: tuple[str, Path]) -> None:
    """Read from the session's uninterrupted smoke run on 2 nodes (conftest's ``smoke_reference``, which the
    preemption tests compare with): a job made once for the tests that only read it."""
    job_id, job_dir = smoke_reference
    final = slurm_cluster.wait_done(job_id, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    startup = json.loads((job_dir / "result.json").read_text())["startup"]
    # under Slurm every phase is known: queued from job.json's time to the batch script's start,
    # batch to its srun, to_task from srun to the task's process start
    assert set(startup) == set(PHASES), startup
    assert all(isinstance(v, float | int) and v >= 0 for v in startup.values()), startup
    assert 0 < startup["import_torch"] <= startup["imports"]
    assert all(startup[phase] < 300 for phase in ("queued", "batch", "to_task"))  # seconds, not epochs

    cluster = ["--cluster", str(slurm_cluster.cluster_yaml)]
    text = slurm_cluster.orch("status", job_id, *cluster, check=True).stdout
    assert "startup (rank 0):" in text
    for phase in ("queued", "batch", "to_task", "imports", "process_group", "build", "ddp", "first_step", "total"):
        assert f"  {phase} " in text, text
    data = json.loads(slurm_cluster.orch("status", job_id, *cluster, "--json", check=True).stdout)
    assert data["startup"] == pytest.approx(startup)
