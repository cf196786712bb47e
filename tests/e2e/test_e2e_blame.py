"""End to end on the local Slurm cluster: a rank stuck in Python, or SIGSTOPped,
on a 2-node job. The other rank gives up waiting after ``launcher.collective_timeout``, srun ends the
step, and only the ranks' outcome records in the job folder say who stopped: ``orch status --json``
(``failure``) and ``orch logs`` must name the stuck rank, the rank that waited, and the timeout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from orchestrator.task.outcome import read_outcomes

if TYPE_CHECKING:
    from conftest import SlurmCluster, SpinHang

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

HANG_JOB = Path(__file__).resolve().parents[1] / "jobs" / "hang.py"
TIMEOUT = 6


@pytest.mark.parametrize(("fault", "stuck", "waiting"), [("spin", 1, 0), ("stop", 0, 1)])
def test_the_rank_that_stopped_progressing_is_named_by_status_and_logs(
        fault: str, stuck: int, waiting: int, slurm_cluster: SlurmCluster, tmp_path: Path,
        request: pytest.FixtureRequest) -> None:
    """A rank stuck in Python, and a SIGSTOPped rank 0 (which also hosts the rendezvous store)."""
    cluster = slurm_cluster

    def short_timeout(data: dict[str, Any]) -> None:
        data["launcher"]["collective_timeout"] = TIMEOUT

    if fault == "spin":  # conftest's spin_hang, this very job (its file: bad-node memory on besides), made once for
        # this test and test_e2e_bad_nodes.py's hang
        spin: SpinHang = request.getfixturevalue("spin_hang")
        job_id, job_dir = spin.job_id, spin.job_dir
    else:
        cluster_yaml = cluster.derived_cluster_yaml(tmp_path / "cluster.yaml", short_timeout)
        job_id, job_dir = cluster.submit(str(HANG_JOB), "--nodes", "2", "--gpus", "1", "--cpus-per-task", "1",
                                         f"fault={fault}", f"fault_rank={stuck}", "fault_step=3", "epochs=3",
                                         cluster_yaml=cluster_yaml)
    status = cluster.wait_done(job_id, timeout=300, job_dir=job_dir)
    records, notes = read_outcomes(job_dir)
    detail = f"{status}\n{[r.model_dump() for r in records]}\n{notes}\n{cluster.describe(job_dir)}"
    assert status["state"] == "FAILED", detail
    failure = status["failure"]
    assert failure is not None, detail
    assert failure["rank"] == stuck and failure["kind"] == "stuck" and failure["waiting"] == [waiting], detail
    assert f"rank {stuck} stopped making progress: rank {waiting} waited for it" in failure["message"], detail
    if fault == "spin" or failure["place"] is not None:  # where the stuck rank was leads the message
        assert failure["place"].startswith(f"rank {stuck} stopped at hang.py:"), detail
        assert failure["message"].startswith(failure["place"]), detail
    if failure["timeout_s"] is not None:  # rank 1 may instead lose its connection to rank 0's store
        assert failure["timeout_s"] == TIMEOUT, detail
        assert failure["timeout_setting"] == "launcher.collective_timeout", detail
    else:
        assert fault == "stop", detail
    human = cluster.orch("status", job_id, "--cluster", str(cluster.cluster_yaml), check=True)
    assert f"# job {job_id}: rank {stuck} stopped" in human.stdout, human.stdout
    logs = cluster.orch("logs", job_id, "--batch", "--cluster", str(cluster.cluster_yaml), check=True)
    assert f"orch: look at rank {stuck}: rank {stuck} stopped" in logs.stderr, logs.stderr
    assert f"{job_id}-rank{stuck}.out (orch logs {job_id} --rank {stuck})" in logs.stderr, logs.stderr
    print(json.dumps(failure, indent=2), [r.model_dump() for r in records])
