"""The memory of bad nodes on the local Slurm cluster: a node recorded as bad
is left out by the next orch submit (the dry run says which and why, sbatch gets --exclude, Slurm
honours it), a job that would need it is refused with the hint, orch nodes --forget gives it back, and
a failed preflight records its node. Each test has its own job root (its own bad_nodes.jsonl) and
turns the memory on (the session's cluster.yaml has launcher.bad_node_ttl 0)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from orchestrator.env.hostlist import expand
from orchestrator.records.restarts import badnodes

if TYPE_CHECKING:
    from conftest import SlurmCluster, SpinHang

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def _remembering(slurm_cluster: SlurmCluster, tmp_path: Path, **launcher: Any) -> tuple[Path, Path]:
    """(cluster.yaml with bad_node_ttl 1 day, its own job root and ``launcher``, that job root)."""
    root = tmp_path / "jobs"
    root.mkdir()

    def edit(data: dict[str, Any]) -> None:
        data["launcher"].update(job_root=str(root), bad_node_ttl=86400, **launcher)

    return slurm_cluster.derived_cluster_yaml(tmp_path / "cluster.yaml", edit), root


def test_a_recorded_node_is_left_out_until_forgotten(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    cluster_yaml, root = _remembering(slurm_cluster, tmp_path)
    badnodes.record(root, "node2", "hang", "4711")
    dry = slurm_cluster.orch("submit", "smoke", "--nodes", "1", "--gpus", "1", "--cluster", str(cluster_yaml),
                             "--dry-run", check=True)
    assert "#SBATCH --exclude=node2" in dry.stdout
    assert "# left out: node2 (a rank on it stopped making progress (blamed for a hang): job 4711" in dry.stdout
    said = slurm_cluster.orch("submit", "smoke", "--nodes", "1", "--gpus", "1", "--cluster", str(cluster_yaml),
                              "--json", check=True)
    assert "orch: left out: node2 (" in said.stderr
    # one job (a second ``orch submit`` of the same line proved the same again: that the record outlives a submission
    # the dry run before, the refusal and ``orch nodes`` after prove too)
    ids = [(str(json.loads(said.stdout)["job_id"]), Path(json.loads(said.stdout)["job_dir"]))]
    for job_id, job_dir in ids:
        shown = slurm_cluster.client("scontrol", "show", "job", job_id).stdout
        assert "ExcNodeList=node2" in shown, shown
        final = slurm_cluster.wait_done(job_id, job_dir=job_dir)
        assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
        assert "node2" not in expand(final["nodes"])  # Slurm's pick among the others (node1 may still be busy)
    every = len(slurm_cluster.nodes())  # a job on every node of the cluster would need node2 too
    refused = slurm_cluster.orch("submit", "smoke", "--nodes", str(every), "--gpus", "1", "--cluster",
                                 str(cluster_yaml))
    assert refused.returncode == 2, refused.stderr
    assert f"fewer than the {every} the job needs" in refused.stderr and "orch nodes --forget" in refused.stderr
    listed = json.loads(slurm_cluster.orch("nodes", "--cluster", str(cluster_yaml), "--json", check=True).stdout)
    assert [(n["node"], n["kind"], n["job_id"]) for n in listed["nodes"]] == [("node2", "hang", "4711")]
    slurm_cluster.orch("nodes", "--cluster", str(cluster_yaml), "--forget", "node2", check=True)
    # forgotten, node2 is used again: a job on every node (one on two could still avoid it by Slurm's own pick)
    job_id, job_dir = slurm_cluster.submit("smoke", "--nodes", str(every), "--gpus", "1", cluster_yaml=cluster_yaml)
    final = slurm_cluster.wait_done(job_id, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    assert expand(final["nodes"]) == slurm_cluster.nodes()


def test_a_failed_preflight_records_its_node_for_later_jobs(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    cluster_yaml, root = _remembering(slurm_cluster, tmp_path)
    job_id, job_dir = slurm_cluster.submit("smoke", "--nodes", "2", "--gpus", "1", "--preflight",
                                           "--env", "ORCH_PREFLIGHT_FAIL_NODE=node2", cluster_yaml=cluster_yaml)
    final = slurm_cluster.wait_done(job_id, job_dir=job_dir)
    assert final["state"] == "FAILED", slurm_cluster.describe(job_dir)
    assert [(n.node, n.kind, n.job_id) for n in badnodes.active(root, 3600)] == [("node2", "preflight", job_id)]
    dry = slurm_cluster.orch("submit", "smoke", "--nodes", "1", "--gpus", "1", "--cluster", str(cluster_yaml),
                             "--dry-run", check=True)
    assert f"# left out: node2 (it failed the preflight checks: job {job_id}" in dry.stdout


TEST_JOBS = Path(__file__).resolve().parents[1] / "jobs"


def test_a_hang_records_the_blamed_node_and_a_user_exception_none(slurm_cluster: SlurmCluster,
                                                                    spin_hang: SpinHang) -> None:
    # rank 1 (node2) spins in Python at step 3: rank 0 gives up waiting, the blame names rank 1 (conftest's spin_hang:
    # the job test_e2e_blame.py reads too, its cluster file written as _remembering(collective_timeout=6) writes it)
    cluster_yaml, root = spin_hang.cluster_yaml, spin_hang.root
    job_id, job_dir, final = spin_hang.job_id, spin_hang.job_dir, spin_hang.final
    assert final["state"] == "FAILED", slurm_cluster.describe(job_dir)
    assert [(n.node, n.kind, n.job_id) for n in badnodes.active(root, 3600)] == [("node2", "hang", job_id)], \
        slurm_cluster.describe(job_dir)
    batch = (job_dir / "logs" / f"slurm-{job_id}.out").read_text(errors="replace")
    assert "orch: node node2 recorded as bad" in batch
    slurm_cluster.orch("nodes", "--cluster", str(cluster_yaml), "--all", check=True)
    # an exception in the job's own code: FAILED, no node recorded
    job_id, job_dir = slurm_cluster.submit(str(TEST_JOBS / "faulty.py"), "--nodes", "2", "--gpus", "1",
                                           "--cpus-per-task", "1", "fault=raise", "fault_rank=1",
                                           cluster_yaml=cluster_yaml)
    final = slurm_cluster.wait_done(job_id, timeout=300, job_dir=job_dir)
    assert final["state"] == "FAILED", slurm_cluster.describe(job_dir)
    assert badnodes.active(root, 3600) == []
