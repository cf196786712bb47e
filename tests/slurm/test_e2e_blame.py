"""End to end on the local Slurm cluster (issue 10, class 11): a rank stuck in Python on a 2-node
job. Rank 0 gives up waiting after ``launcher.collective_timeout``, srun ends the step, and only the
ranks' outcome records in the job folder say who stopped: ``orch status --json`` (``failure``) and
``orch logs`` must name rank 1, the rank that waited, and the timeout that applied."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from orchestrator.jobdirs import read_outcomes

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

HANG_JOB = Path(__file__).resolve().parents[1] / "jobs" / "hang.py"
TIMEOUT = 6


def test_a_rank_stuck_in_python_is_named_by_status_and_logs(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    cluster = slurm_cluster

    def short_timeout(data: dict[str, Any]) -> None:
        data["launcher"]["collective_timeout"] = TIMEOUT

    cluster_yaml = cluster.derived_cluster_yaml(tmp_path / "cluster.yaml", short_timeout)
    job_id, job_dir = cluster.submit(str(HANG_JOB), "--nodes", "2", "--gpus", "1", "--cpus-per-task", "1",
                                     "fault=spin", "fault_rank=1", "fault_step=3", "epochs=3",
                                     cluster_yaml=cluster_yaml)
    status = cluster.wait_done(job_id, timeout=300, job_dir=job_dir)
    records, notes = read_outcomes(job_dir)
    detail = f"{status}\n{[r.model_dump() for r in records]}\n{notes}\n{cluster.describe(job_dir)}"
    assert status["state"] == "FAILED", detail
    failure = status["failure"]
    assert failure is not None, detail
    assert failure["rank"] == 1 and failure["kind"] == "stuck" and failure["waiting"] == [0], detail
    assert failure["timeout_s"] == TIMEOUT and failure["timeout_setting"] == "launcher.collective_timeout", detail
    assert failure["message"].startswith("rank 1 stopped making progress: rank 0 waited for it"), detail
    human = cluster.orch("status", job_id, "--cluster", str(cluster.cluster_yaml), check=True)
    assert f"# job {job_id}: rank 1 stopped making progress" in human.stdout, human.stdout
    logs = cluster.orch("logs", job_id, "--cluster", str(cluster.cluster_yaml), check=True)
    assert "orch: look at rank 1: rank 1 stopped making progress" in logs.stderr, logs.stderr
    assert f"{job_id}-rank1.out (orch logs {job_id} --rank 1)" in logs.stderr, logs.stderr
    print(json.dumps(failure, indent=2))
