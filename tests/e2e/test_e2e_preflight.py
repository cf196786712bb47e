"""orch submit --preflight on the local Slurm cluster, with the preflight made to fail on node2
by its test hook (ORCH_PREFLIGHT_FAIL_NODE, matched against SLURMD_NODENAME on each node):
- stop mode: the batch log names node2 and the check, the job fails before training;
- exclude mode: a one-node job forced onto node2 (--nodelist node2) submits itself again with
  --exclude=node2, and the new attempt runs on another node (job_id, preflight_attempts.json, orch status);
- exclude mode with every node of the cluster needed: too few nodes remain, so it gives up with a clear message."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from orchestrator.env.hostlist import expand

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

HOOK = ["--env", "ORCH_PREFLIGHT_FAIL_NODE=node2"]


def _batch_log(job_dir: Path, job_id: str) -> str:
    return (job_dir / "logs" / f"slurm-{job_id}.out").read_text(errors="replace")


def test_preflight_names_the_failing_node_and_stops(slurm_cluster: SlurmCluster) -> None:
    job_id, job_dir = slurm_cluster.submit("smoke", "--nodes", "2", "--gpus", "1", "--preflight", *HOOK)
    final = slurm_cluster.wait_done(job_id, job_dir=job_dir)
    assert final["state"] == "FAILED", slurm_cluster.describe(job_dir)
    log = _batch_log(job_dir, job_id)
    assert "orch: preflight: node node2 failed the check test_hook" in log, log
    assert "the job stops before training" in log
    assert "every check passed" not in log
    verdict = json.loads((job_dir / "preflight.json").read_text())
    assert verdict["failed_nodes"] == [{"host": "node2", "check": "test_hook"}]
    assert not (job_dir / "metrics.jsonl").exists()  # training never started
    assert (job_dir / "job_id").read_text().strip() == job_id


def test_preflight_exclude_resubmits_without_the_node(slurm_cluster: SlurmCluster) -> None:
    first, job_dir = slurm_cluster.submit("smoke", "--nodes", "1", "--gpus", "1", "--nodelist", "node2",
                                          "--preflight=exclude", *HOOK)
    deadline = time.monotonic() + 120
    while (job_dir / "job_id").read_text().strip() == first and time.monotonic() < deadline:
        time.sleep(0.5)
    second = (job_dir / "job_id").read_text().strip()
    assert second != first, slurm_cluster.describe(job_dir)
    final = slurm_cluster.wait_done(second, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    assert "node2" not in expand(final["nodes"])  # Slurm's pick among the others
    assert "excluded node2" in (final["excluded"] or "")
    log = _batch_log(job_dir, first)
    assert "orch: preflight: node node2 failed the check test_hook" in log, log
    assert f"job {second} runs it without the failed node(s) (--exclude=node2 --nodelist=)" in log
    assert "every check passed" in _batch_log(job_dir, second)
    record = json.loads((job_dir / "preflight_attempts.json").read_text())
    assert record["excluded"] == ["node2"]
    assert [(a["job_id"], a["next_job_id"]) for a in record["attempts"]] == [(first, second)]
    assert json.loads((job_dir / "result.json").read_text())  # the job itself ran after the preflight
    text = slurm_cluster.orch("status", second, "--cluster", str(slurm_cluster.cluster_yaml), check=True).stdout
    assert f"# job {second}: preflight excluded node2 (attempt 2 of 3, after job {first})" in text


def test_preflight_exclude_gives_up_when_too_few_nodes_remain(slurm_cluster: SlurmCluster) -> None:
    every = len(slurm_cluster.nodes())  # the job needs every node of the cluster, node2 included
    job_id, job_dir = slurm_cluster.submit("smoke", "--nodes", str(every), "--gpus", "1", "--preflight=exclude",
                                           *HOOK)
    final = slurm_cluster.wait_done(job_id, job_dir=job_dir)
    assert final["state"] == "FAILED", slurm_cluster.describe(job_dir)
    log = _batch_log(job_dir, job_id)
    assert f"giving up: without node2 only {every - 1} node(s) remain, the job needs {every}" in log, log
    assert (job_dir / "job_id").read_text().strip() == job_id
