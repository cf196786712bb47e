"""The world check under Slurm: ``tests/scripts/alone.py`` (each rank rank 0 of a world of one, at a hard-coded
tcp:// rendezvous) submitted on two nodes completes with the warning in ``orch status``; with ``--strict-world``
the job fails and the failure names it; ``tests/scripts/no_init.py`` with ``--independent-ranks`` completes
with nothing said."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SCRIPTS = Path(__file__).resolve().parents[2] / "tests" / "scripts"


def test_ranks_that_never_formed_a_world_under_slurm(slurm_cluster: SlurmCluster) -> None:
    if len(slurm_cluster.nodes()) < 2:
        pytest.skip(f"needs 2 nodes; the cluster has {len(slurm_cluster.nodes())}")
    two = ("--nodes", "2", "--gpus", "1")
    warn_id, warn_dir = slurm_cluster.submit(str(SCRIPTS / "alone.py"), *two)
    strict_id, strict_dir = slurm_cluster.submit(str(SCRIPTS / "alone.py"), *two, "--strict-world")
    free_id, free_dir = slurm_cluster.submit(str(SCRIPTS / "no_init.py"), *two, "--independent-ranks")

    warned = slurm_cluster.wait_done(warn_id, job_dir=warn_dir)
    assert warned["state"] == "COMPLETED", slurm_cluster.describe(warn_dir)
    assert warned["world"]["kind"] == "never_formed" and warned["world"]["ranks"] == [0, 1]
    assert warned["world"]["message"].startswith("the 2 ranks never formed a process group: 2 independent copies")
    shown = slurm_cluster.orch("status", warn_id, "--cluster", str(slurm_cluster.cluster_yaml), check=True).stdout
    assert f"# job {warn_id}: warning: the 2 ranks never formed a process group" in shown

    failed = slurm_cluster.wait_done(strict_id, job_dir=strict_dir)
    assert failed["state"] == "FAILED", slurm_cluster.describe(strict_dir)
    assert "never formed a process group" in failed["failure"]["message"]

    free = slurm_cluster.wait_done(free_id, job_dir=free_dir)
    assert free["state"] == "COMPLETED", slurm_cluster.describe(free_dir)
    assert free["world"] is None
