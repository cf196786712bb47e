"""The self-test on the local Slurm cluster: 2 nodes x 2 tasks through orch submit, healthy;
then with the partition expecting an impossible bus bandwidth, which must fail the job (non-zero exit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from orchestrator.env.hostlist import expand

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SMALL = ["max_bytes=65536", "link_bytes=65536", "gemm_size=64"]


def test_selftest_2x2_passes(slurm_cluster: SlurmCluster) -> None:
    job_id, job_dir = slurm_cluster.submit("selftest", "--nodes", "2", "--gpus", "2", *SMALL)
    final = slurm_cluster.wait_done(job_id, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    result = json.loads((job_dir / "result.json").read_text())
    assert result["status"] == "passed" and result["world_size"] == 4
    assert all(check["ok"] for check in result["checks"]), result["checks"]
    assert sorted({r["host"] for r in result["ranks"]}) == expand(final["nodes"])  # the two nodes Slurm gave
    assert len({r["master"] for r in result["ranks"]}) == 1


def test_selftest_fails_below_the_partition_expectation(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    def expect(data: dict[str, Any]) -> None:
        data["partitions"][0]["expect"] = {"busbw_gbps": 1000000}

    cluster_yaml = slurm_cluster.derived_cluster_yaml(tmp_path / "cluster.yaml", expect)
    # 2 nodes x 1: the expectation is the bus bandwidth of the allreduce across the nodes; a second rank per node
    # (test_selftest_2x2_passes has them) adds nothing to its verdict and costs two rank start-ups
    job_id, job_dir = slurm_cluster.submit("selftest", "--nodes", "2", "--gpus", "1", *SMALL,
                                           cluster_yaml=cluster_yaml)
    final = slurm_cluster.wait_done(job_id, job_dir=job_dir)
    assert final["state"] == "FAILED", slurm_cluster.describe(job_dir)
    result = json.loads((job_dir / "result.json").read_text())
    failed = [c["name"] for c in result["checks"] if not c["ok"]]
    assert failed == ["allreduce"]
    assert json.loads((job_dir / "job.json").read_text())["expect"] == {"busbw_gbps": 1000000.0}
