"""End to end on the local Slurm cluster: orch submit, status, logs, list, plot, cancel,
refusals by sbatch, a killed task, and preemption with requeue and resume.

Every job here is real: sbatch queues it, slurmd starts the tasks on node1 and node2, the ranks
train with gloo over loopback. Jobs are small (seconds each) to keep the session short on 2 cores.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from orchestrator.env.hostlist import expand

if TYPE_CHECKING:
    from conftest import Preempted, SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SMOKE_FAST = ["epochs=2", "samples=512", "test_samples=128"]
# runs until cancelled or killed: many epochs of a few steps each
SMOKE_LONG = ["epochs=100000", "samples=256", "test_samples=0", "checkpoint=false"]


def _rank_records(job_dir: Path) -> dict[int, dict[str, Any]]:
    folder = job_dir / "ranks"
    return {int(p.stem.removeprefix("rank")): json.loads(p.read_text()) for p in folder.glob("rank*.json")}


def test_probe_2x2_ranks_have_the_right_identity(slurm_cluster: SlurmCluster) -> None:
    """Four ranks on two nodes: what orch derived matches what Slurm placed.

    Slurm picks the nodes (node1 may still be finishing an earlier test's job), so each rank's node is
    read against the job's own node list: node NODE_RANK of the allocation, in Slurm's order."""
    probe = str(slurm_cluster.test_jobs / "probe.py")
    job_id, job_dir = slurm_cluster.submit(probe, "--nodes", "2", "--gpus", "2", *SMOKE_FAST,
                                           "check_sync=true")
    final = slurm_cluster.wait_done(job_id, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    records = _rank_records(job_dir)
    assert sorted(records) == [0, 1, 2, 3]
    nodes = expand(final["nodes"])
    assert len(nodes) == 2, final
    for rank, rec in records.items():
        assert rec["RANK"] == rec["SLURM_PROCID"] == str(rank) == str(rec["ctx_rank"])
        assert rec["LOCAL_RANK"] == rec["SLURM_LOCALID"] == str(rank % 2) == str(rec["ctx_local_rank"])
        assert rec["NODE_RANK"] == rec["SLURM_NODEID"] == str(rank // 2)
        assert rec["SLURMD_NODENAME"] == nodes[rank // 2]
        assert (rec["WORLD_SIZE"], rec["LOCAL_WORLD_SIZE"]) == ("4", "2")
        assert rec["SLURM_JOB_ID"] == job_id
        assert rec["CUDA_VISIBLE_DEVICES"] == "0,1"  # the fake GPUs of each node
        assert rec["OMP_NUM_THREADS"] == "1" and rec["GLOO_SOCKET_IFNAME"] == "lo"  # cluster.yaml env
    # one rendezvous point for everyone
    assert len({(r["MASTER_ADDR"], r["MASTER_PORT"]) for r in records.values()}) == 1
    # each task ran in its own process: four distinct pids
    assert len({r["pid"] for r in records.values()}) == 4
    result = json.loads((job_dir / "result.json").read_text())
    assert result["world_size"] == 4 and result["in_sync"] is True
    assert len(result["param_digests"]) == 4 and len(set(result["param_digests"])) == 1


def test_smoke_2x2_status_logs_list_plot(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    job_id, job_dir = slurm_cluster.submit("smoke", "--nodes", "2", "--gpus", "2", *SMOKE_FAST)
    assert (job_dir / "job_id").read_text().strip() == job_id
    final = slurm_cluster.wait_done(job_id, job_dir=job_dir)
    assert final["job_id"] == job_id
    assert final["state"] == "COMPLETED" and final["exit_code"] == 0, slurm_cluster.describe(job_dir)

    metrics = [json.loads(line) for line in (job_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["epoch"] for m in metrics] == [1, 2]
    assert all(m["world_size"] == 4 for m in metrics)
    result = json.loads((job_dir / "result.json").read_text())
    assert result["in_sync"] is True and len(set(result["param_digests"])) == 1

    cluster = ["--cluster", str(slurm_cluster.cluster_yaml)]
    batch = slurm_cluster.orch("logs", job_id, "--batch", *cluster, check=True).stdout
    assert f"orch: job {job_id}" in batch  # the batch step's MASTER_ADDR line
    rank0 = slurm_cluster.orch("logs", job_id, "--rank", "0", *cluster, check=True).stdout
    assert "epoch 2/2" in rank0 and "world size 4" in rank0
    for rank in range(4):
        assert (job_dir / "logs" / f"{job_id}-rank{rank}.out").is_file()
    missing = slurm_cluster.orch("logs", job_id, "--rank", "7", *cluster)
    assert missing.returncode == 2 and "rank 7" in missing.stderr and "Traceback" not in missing.stderr
    # -f on a finished job prints the log and returns
    followed = slurm_cluster.orch("logs", job_id, "--rank", "0", "-f", *cluster, timeout=30, check=True)
    assert followed.stdout == rank0

    by_folder = slurm_cluster.orch("status", str(job_dir), "--json", *cluster, check=True)
    assert json.loads(by_folder.stdout)["state"] == "COMPLETED"
    table = slurm_cluster.orch("status", job_id, *cluster, check=True).stdout
    assert "COMPLETED" in table.splitlines()[1] and job_id in table

    listed = json.loads(slurm_cluster.orch("list", "--json", *cluster, check=True).stdout)
    mine = [row for row in listed if row["job_id"] == job_id]
    assert len(mine) == 1 and mine[0]["name"] == "smoke" and mine[0]["job_dir"] == str(job_dir)
    assert mine[0]["state"] == "COMPLETED"

    png = tmp_path / "plot.png"
    slurm_cluster.orch("plot", job_id, "-o", str(png), *cluster, check=True)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cancel_a_running_job(slurm_cluster: SlurmCluster) -> None:
    # 2 nodes x 1: a job on two nodes is cancelled as one (scancel of the job); a second rank per node cost two rank
    # start-ups and proved nothing more
    job_id, job_dir = slurm_cluster.submit("smoke", "--nodes", "2", "--gpus", "1", *SMOKE_LONG)
    slurm_cluster.wait(job_id, lambda s: s["state"] == "RUNNING", 60, job_dir, "RUNNING")
    out = slurm_cluster.orch("cancel", job_id, "--cluster", str(slurm_cluster.cluster_yaml), check=True)
    assert f"cancelled {job_id}" in out.stdout
    final = slurm_cluster.wait_done(job_id, timeout=60, job_dir=job_dir)
    assert final["state"] == "CANCELLED"
    again = slurm_cluster.orch("cancel", job_id, "--cluster", str(slurm_cluster.cluster_yaml), check=True)
    assert "already ended (CANCELLED)" in again.stdout
    unknown = slurm_cluster.orch("cancel", "999999", "--cluster", str(slurm_cluster.cluster_yaml))
    assert unknown.returncode == 1 and "999999" in unknown.stderr and "Traceback" not in unknown.stderr


def _not_queued(job_root: Path, before: set[Path]) -> Path:
    new = [p for p in job_root.iterdir() if p.is_dir() and p not in before]
    assert len(new) == 1, f"expected one new job folder, got {new}"
    folder = new[0]
    assert not (folder / "job_id").exists()
    assert (folder / "submit_error.txt").read_text().strip()
    return folder


def test_sbatch_refuses_an_unknown_partition(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    def add_partition(data: dict[str, Any]) -> None:
        data["partitions"].append({**data["partitions"][0], "name": "nosuch"})

    cluster_yaml = slurm_cluster.derived_cluster_yaml(tmp_path / "cluster.yaml", add_partition)
    before = set(slurm_cluster.job_root.iterdir())
    proc = slurm_cluster.orch("submit", "smoke", "--partition", "nosuch", "--cluster", str(cluster_yaml))
    assert proc.returncode != 0
    assert "Invalid partition name specified" in proc.stderr or "invalid partition" in proc.stderr
    assert "Traceback" not in proc.stderr
    folder = _not_queued(slurm_cluster.job_root, before)
    assert "partition" in (folder / "submit_error.txt").read_text()
    status = slurm_cluster.orch("status", str(folder), "--cluster", str(cluster_yaml))
    assert status.returncode == 2 and "never queued" in status.stderr


def test_sbatch_refuses_too_many_nodes(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    every = len(slurm_cluster.nodes())

    def more_nodes(data: dict[str, Any]) -> None:  # orch believes in two nodes more than Slurm has
        data["partitions"][0]["nodes"] = f"node[1-{every + 2}]"

    cluster_yaml = slurm_cluster.derived_cluster_yaml(tmp_path / "cluster.yaml", more_nodes)
    before = set(slurm_cluster.job_root.iterdir())
    proc = slurm_cluster.orch("submit", "smoke", "--nodes", str(every + 1), "--gpus", "1", "--cpus-per-task", "1",
                              "--cluster", str(cluster_yaml))
    assert proc.returncode != 0
    assert "Node count specification invalid" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    _not_queued(slurm_cluster.job_root, before)


def test_kill_9_of_one_task_ends_the_job_and_names_the_rank(slurm_cluster: SlurmCluster) -> None:
    job_id, job_dir = slurm_cluster.submit("smoke", "--nodes", "2", "--gpus", "2", *SMOKE_LONG)
    deadline = time.monotonic() + 90
    victims: list[tuple[int, dict[str, str]]] = []
    metrics = job_dir / "metrics.jsonl"
    while time.monotonic() < deadline:  # training is under way once rank 0 logged an epoch
        victims = [p for p in slurm_cluster.job_processes(job_id) if p[1].get("SLURM_PROCID") == "2"]
        if victims and metrics.is_file() and metrics.read_text().strip():
            break
        time.sleep(0.3)
    assert victims, f"no task of rank 2 found\n{slurm_cluster.describe(job_dir)}"
    os.kill(victims[0][0], signal.SIGKILL)
    killed_at = time.monotonic()
    final = slurm_cluster.wait_done(job_id, timeout=30, job_dir=job_dir)
    took = time.monotonic() - killed_at
    assert final["state"] in ("FAILED", "CANCELLED"), final
    assert final["exit_code"] != 0 or final["signal"] not in (None, 0), final
    cluster = ["--cluster", str(slurm_cluster.cluster_yaml)]
    batch = slurm_cluster.orch("logs", job_id, "--batch", *cluster, check=True).stdout
    assert "task 2" in batch or "rank 2" in batch, batch
    print(f"kill -9 of rank 2 -> {final['state']} after {took:.1f} s")


def test_preemption_requeues_resumes_and_matches_an_uninterrupted_run(
        slurm_cluster: SlurmCluster, smoke_reference: tuple[str, Path], preempted_smoke: Preempted) -> None:
    """The preempted run (conftest's ``preempted_smoke``: SMOKE_REFERENCE, queued by orch.service.queue as orch submit
    queues it, preempted after its first epoch; the API's and the tracking's tests read it too) as the CLI sees it."""
    ref_id, ref_dir = smoke_reference  # the same job uninterrupted (submitted first when no test has yet)
    job_id, job_dir = preempted_smoke.handle.job_id, preempted_smoke.handle.job_dir
    metrics = job_dir / "metrics.jsonl"
    requeued = preempted_smoke.requeued  # orch status --json while the requeued job waited for its BeginTime
    assert requeued["state"] == "PENDING" and (requeued["restarts"] or 0) >= 1, requeued
    assert requeued["orch_state"] == "queued"
    final = slurm_cluster.wait_done(job_id, timeout=180, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    rank0 = (job_dir / "logs" / f"{job_id}-rank0.out").read_text()
    assert "preempted (SIGUSR2)" in rank0 and "resuming from checkpoint" in rank0
    assert [json.loads(x)["epoch"] for x in metrics.read_text().splitlines()] == list(range(1, 13))
    resumed = json.loads((job_dir / "result.json").read_text())

    assert slurm_cluster.wait_done(ref_id, job_dir=ref_dir)["state"] == "COMPLETED"
    assert "preempted" not in (ref_dir / "logs" / f"{ref_id}-rank0.out").read_text()
    reference = json.loads((ref_dir / "result.json").read_text())
    assert resumed["in_sync"] and reference["in_sync"]
    stop = next(line for line in rank0.splitlines() if "stopped at" in line)
    ours = [json.loads(x)["train_loss"] for x in metrics.read_text().splitlines()]
    theirs = [json.loads(x)["train_loss"] for x in (ref_dir / "metrics.jsonl").read_text().splitlines()]
    gaps = [abs(a - b) for a, b in zip(ours, theirs, strict=True)]
    diverged = [epoch for epoch, gap in enumerate(gaps, start=1) if gap]
    assert resumed["param_digest"] == reference["param_digest"], (
        f"{stop!r}: the resumed run's parameters differ from the uninterrupted run's; train_loss differs "
        f"from epoch {diverged[:1]} on (max |diff| {max(gaps):.3g})")


@pytest.mark.mnist
def test_mnist_2x2(slurm_cluster: SlurmCluster) -> None:
    data_dir = os.environ.get("ORCH_DATA_DIR")
    if not data_dir or not (Path(data_dir) / "MNIST" / "raw").is_dir():
        pytest.skip("MNIST is not present (set ORCH_DATA_DIR to a folder with MNIST/raw)")
    # 80 steps of 4 x 32 images: about 80% test accuracy, in a fraction of an epoch
    job_id, job_dir = slurm_cluster.submit("mnist", "--nodes", "2", "--gpus", "2", "--cpus-per-task", "1",
                                           "epochs=1", "batch_size=32", "max_steps_per_epoch=80")
    final = slurm_cluster.wait_done(job_id, timeout=300, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    (metric,) = [json.loads(x) for x in (job_dir / "metrics.jsonl").read_text().splitlines()]
    assert metric["world_size"] == 4 and metric["test_acc"] is not None and metric["test_acc"] > 0.5
