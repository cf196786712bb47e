"""End to end on the local Slurm cluster: ``orch submit --sweep`` as one job array, and ``orch list``
agreeing with ``orch status`` on COMPLETED, CANCELLED, FAILED, PENDING and array elements.

The cluster keeps no accounting (``sacct`` is disabled); finished jobs come from squeue (until
MinJobAge) and then from the job completion log, which files array elements under their raw id.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SMOKE_FAST = ["epochs=1", "samples=256", "test_samples=64", "--cpus-per-task", "1"]
SMOKE_LONG = ["epochs=100000", "samples=256", "test_samples=0", "checkpoint=false", "--cpus-per-task", "1"]
BROKEN_JOB = """\
from orchestrator import JobSpec, TrainParams


def build(params, ctx):
    raise RuntimeError("boom in build")


SPEC = JobSpec(name="broken", params=TrainParams, build=build)
"""
LATER_TEMPLATE = """\
{% extends "base.sbatch.j2" %}
{% block sbatch %}
{{ super() }}
#SBATCH --begin=now+3600
{% endblock %}
{% block master_addr %}
MASTER_ADDR={{ master_addr | q }}
{% endblock %}
"""


def _states(cluster: SlurmCluster, ids: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(orch list rows, orch status rows) by job id."""
    where = ["--cluster", str(cluster.cluster_yaml)]
    listed = json.loads(cluster.orch("list", "--json", *where, check=True).stdout)
    status = json.loads(cluster.orch("status", *ids, "--json", *where, check=True).stdout)
    return {r["job_id"]: r for r in listed if r["job_id"] in ids}, {r["job_id"]: r for r in status}


def test_sweep_and_list_status_agree(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    cluster = slurm_cluster
    # a sweep of 2 elements, one at a time: the second waits (PENDING, JobArrayTaskLimit)
    proc = cluster.orch("submit", "smoke", "--nodes", "1", "--gpus", "1", "--sweep", "lr=0.2,0.01",
                        "--array-throttle", "1", *SMOKE_FAST, "--cluster", str(cluster.cluster_yaml), "--json",
                        check=True)
    array = json.loads(proc.stdout)
    elements = [e["job_id"] for e in array["elements"]]
    assert elements == [f"{array['job_id']}_0", f"{array['job_id']}_1"]
    broken = tmp_path / "broken.py"
    broken.write_text(BROKEN_JOB)
    failed, _ = cluster.submit(str(broken), "--nodes", "1", "--gpus", "1", "--cpus-per-task", "1")
    cancelled, _ = cluster.submit("smoke", "--nodes", "1", "--gpus", "1", *SMOKE_LONG)
    # PENDING for sure: a user template adds --begin to orch's #SBATCH block through {{ super() }}
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "single_node.sbatch.j2").write_text(LATER_TEMPLATE)
    held, _ = cluster.submit("smoke", "--nodes", "1", "--gpus", "1", "--templates", str(templates), *SMOKE_FAST)
    try:
        cluster.wait(cancelled, lambda s: s["state"] == "RUNNING", 120, what="RUNNING")
        cluster.orch("cancel", cancelled, "--cluster", str(cluster.cluster_yaml), check=True)
        ids = [*elements, failed, cancelled, held]
        for job_id in (*elements, failed, cancelled):
            cluster.wait_done(job_id)
        listed, status = _states(cluster, ids)
        expected = {elements[0]: "COMPLETED", elements[1]: "COMPLETED", failed: "FAILED",
                    cancelled: "CANCELLED", held: "PENDING"}
        assert {i: r["state"] for i, r in status.items()} == expected, status
        assert {i: r["state"] for i, r in listed.items()} == expected, listed
        for job_id in ids:
            for key in ("state", "orch_state", "created", "job_dir", "exit_code"):
                assert listed[job_id][key] == status[job_id][key], (job_id, key, listed[job_id], status[job_id])
        assert status[held]["reason"] == "BeginTime" and status[failed]["exit_code"] not in (None, 0)
        assert status[elements[0]]["gpu_hours"] is not None
        # each element ran in its own folder with its own overrides, logs named by the element's id
        folder = Path(array["job_dir"])
        results = []
        for index, job_id in enumerate(elements):
            element = folder / str(index)
            assert status[job_id]["job_dir"] == str(element)
            assert json.loads((element / "job.json").read_text())["params"]["lr"] == (0.2, 0.01)[index]
            assert (element / "logs" / f"slurm-{job_id}.out").is_file()
            rank0 = cluster.orch("logs", job_id, "--rank", "0", "--cluster", str(cluster.cluster_yaml), check=True)
            assert "epoch 1/1" in rank0.stdout
            results.append(json.loads((element / "result.json").read_text()))
            assert (element / "slurm_job_id").read_text().strip().isdigit()
        assert results[0]["param_digest"] != results[1]["param_digest"]
    finally:
        cluster.client("scancel", held)
    cluster.wait_done(held)
    deadline = time.monotonic() + 30
    while cluster.status(held)["state"] != "CANCELLED":
        assert time.monotonic() < deadline
        time.sleep(0.5)


def test_requeued_job_shows_restarts_and_why_it_waits(slurm_cluster: SlurmCluster) -> None:
    """After ``scontrol requeue`` Slurm holds the job PENDING (reason BeginTime, for about 120 s): orch status of
    several jobs and orch list (the batched squeue path, no scontrol) show RESTARTS 1 and that reason."""
    job_id, job_dir = slurm_cluster.submit("smoke", "--nodes", "1", "--gpus", "1", *SMOKE_LONG)
    other_id, _ = slurm_cluster.submit("smoke", "--nodes", "1", "--gpus", "1", *SMOKE_FAST)
    try:
        slurm_cluster.wait(job_id, lambda s: s["state"] == "RUNNING", 120, job_dir, "RUNNING")
        requeued = slurm_cluster.client("scontrol", "requeue", job_id)
        assert requeued.returncode == 0, requeued.stderr
        deadline = time.monotonic() + 60
        while True:
            listed, status = _states(slurm_cluster, [job_id, other_id])
            row = status[job_id]
            # list ran just before status: wait until both saw the reason Slurm sets a moment after the requeue
            if row["state"] == "PENDING" and row["reason"] == "BeginTime" \
                    and listed[job_id]["reason"] == "BeginTime":
                break
            assert time.monotonic() < deadline, row
            time.sleep(0.5)
        assert (row["restarts"], row["source"]) == (1, "squeue")
        assert (listed[job_id]["restarts"], listed[job_id]["reason"]) == (1, "BeginTime")
        table = slurm_cluster.orch("status", job_id, other_id, "--cluster", str(slurm_cluster.cluster_yaml),
                                   check=True).stdout
        line = next(ln.split() for ln in table.splitlines() if ln.startswith(f"{job_id} "))
        assert line[1] == "PENDING" and line[3] == "0+1" and "BeginTime" in line, table
    finally:
        slurm_cluster.client("scancel", job_id, other_id)
