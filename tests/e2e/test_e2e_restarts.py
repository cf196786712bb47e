"""End to end on the local Slurm cluster: a failed training step is restarted inside the
allocation from the newest checkpoint (``--max-restarts``), and ``attempts.json`` says what happened. These are
the step-level restarts (a new srun step): each cluster file here pins ``launcher.restart: step`` (the default,
in-process: test_e2e_inprocess_restarts.py, where a script on 2 nodes restarts warm)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from orchestrator.env import hostlist

if TYPE_CHECKING:
    from conftest import LocalRun, SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

TESTS = Path(__file__).resolve().parents[1]
FAULTY = TESTS / "jobs" / "faulty.py"
ORCH = str(Path(sys.executable).with_name("orch"))


def _by_step(data: dict[str, Any]) -> None:
    data["launcher"]["restart"] = "step"


def _sync_saves(cluster: SlurmCluster, tmp_path: Path) -> Path:
    """The session's cluster file with ``launcher.restart: step`` and ``launcher.checkpoint_write: sync``: a
    checkpoint is on disk before the next step, so a rank killed a few steps after it resumes from it. (With the
    default background write a kill a few milliseconds after an epoch's end may come before the file is whole:
    the next attempt then starts from the checkpoint before it, as it should.)"""

    def edit(data: dict[str, Any]) -> None:
        _by_step(data)
        data["launcher"]["checkpoint_write"] = "sync"

    return cluster.derived_cluster_yaml(tmp_path / "cluster-sync-saves.yaml", edit)


def _attempts(job_dir: Path) -> list[dict[str, object]]:
    data = json.loads((job_dir / "attempts.json").read_text())
    assert isinstance(data, list)
    return data


def test_kill_9_of_one_rank_mid_epoch_is_restarted_in_the_allocation(slurm_cluster: SlurmCluster, tmp_path: Path,
                                                                     faulty_epochs2: LocalRun) -> None:
    """Rank 1 dies of SIGKILL in epoch 2 (restart 0 only): one restart, COMPLETED, the same parameters.
    The partition's other nodes are excluded, so no node is left to submit the job again on (that path:
    the test below): the restart stays in the allocation, on the same nodes."""
    cluster = slurm_cluster
    params = ["epochs=2", "fault=kill", "fault_rank=1", "fault_step=40", "fault_restart=0"]
    others = cluster.nodes()[2:]
    job_id, job_dir = cluster.submit(str(FAULTY), "--nodes", "2", "--gpus", "1", "--cpus-per-task", "1",
                                     "--max-restarts", "2", *(["--exclude", ",".join(others)] if others else []),
                                     *params, cluster_yaml=_sync_saves(cluster, tmp_path))
    status = cluster.wait_done(job_id, timeout=300, job_dir=job_dir)
    detail = f"{status}\n{cluster.describe(job_dir)}"
    assert status["state"] == "COMPLETED", detail
    attempts = _attempts(job_dir)
    assert [a["kind"] for a in attempts][-1] == "completed", (attempts, detail)
    assert len(attempts) == 2 and attempts[1]["attempt"] == 1, (attempts, detail)
    first = attempts[0]
    # under srun rank 0 may be taken down before it writes a word: srun's report in the batch log names rank 1
    assert first["exit_code"] != 0 and first["kind"] == "vanished", attempts
    assert first["in_process"] is False and first["by_step"] == "launcher.restart: step", attempts  # and says why
    assert (first["blamed_rank"], first["blamed_node"]) == (1, hostlist.expand(status["nodes"])[1]), attempts
    assert attempts[1]["resumed_step"] == 32, attempts  # the epoch-1 checkpoint (32 steps per epoch)
    assert isinstance(first["recovery_s"], float), attempts
    assert status["in_job_restarts"] == 1 and status["restarts_shown"] == "1+0", status
    result = json.loads((job_dir / "result.json").read_text())
    goodput = result["goodput"]
    assert 0 < goodput["goodput"] <= 1 and goodput["recovery_s"] > 0, goodput
    human = cluster.orch("status", job_id, "--cluster", str(cluster.cluster_yaml), check=True).stdout
    assert "# attempt 0 (requeue 0):" in human and "# goodput " in human, human
    batch = (job_dir / "logs" / f"slurm-{job_id}.out").read_text(errors="replace")
    assert "only 1 node(s) remain, the job needs 2: restarting on the same nodes" in batch, batch
    # the same job without the fault, run locally with the same world size (conftest's faulty_epochs2, one run for
    # the tests that need it): bit-equal parameters
    clean = faulty_epochs2.param_digest()
    assert result["param_digest"] == clean, (result["param_digest"], clean)


def test_the_same_error_at_the_same_step_is_restarted_once(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    cluster = slurm_cluster
    job_id, job_dir = cluster.submit(str(FAULTY), "--nodes", "2", "--gpus", "1", "--cpus-per-task", "1",
                                     "--max-restarts", "3", "epochs=1", "fault=raise", "fault_step=3",
                                     cluster_yaml=cluster.derived_cluster_yaml(tmp_path / "step.yaml", _by_step))
    status = cluster.wait_done(job_id, timeout=300, job_dir=job_dir)
    detail = f"{status}\n{cluster.describe(job_dir)}"
    assert status["state"] == "FAILED", detail
    attempts = _attempts(job_dir)
    assert len(attempts) == 2, (attempts, detail)
    assert attempts[0]["restarted"] is True and attempts[1]["restarted"] is False, attempts
    assert attempts[1]["message"] == "the same error at the same step: not restarted again", attempts
    assert attempts[0]["blamed_node"] is None, attempts  # a Python exception never marks a node
    batch = "".join(p.read_text(errors="replace") for p in (job_dir / "logs").glob(f"slurm-{job_id}.out"))
    assert "the same error at the same step: not restarted again" in batch, batch


HANG = TESTS / "jobs" / "hang.py"


def test_a_sigstopped_rank_is_caught_and_the_next_attempt_runs_on_the_spare(slurm_cluster: SlurmCluster,
                                                                             tmp_path: Path) -> None:
    """Needs three nodes (tests/slurm/cluster.sh starts three): 2 + 1 spare. Rank 1 (node2)
    SIGSTOPs itself; the watchdog (collective_timeout) fires, node2 is blamed, and attempt 1 runs on
    node1 and node3, where the fault (node2 only) does not happen: COMPLETED."""
    cluster = slurm_cluster
    if len(cluster.nodes()) < 3:
        pytest.skip(f"needs a third node; the cluster has {cluster.nodes()} (tests/slurm/cluster.sh down, then up: "
                    "it starts three)")

    def short_timeout(data: dict[str, Any]) -> None:
        _by_step(data)
        data["launcher"]["collective_timeout"] = 6

    cluster_yaml = cluster.derived_cluster_yaml(tmp_path / "cluster.yaml", short_timeout)
    job_id, job_dir = cluster.submit(str(HANG), "--nodes", "2", "--gpus", "1", "--cpus-per-task", "1",
                                     "--max-restarts", "1", "--spare-nodes", "1", "fault=stop", "fault_rank=1",
                                     "fault_step=3", "fault_node=node2", cluster_yaml=cluster_yaml)
    status = cluster.wait_done(job_id, timeout=300, job_dir=job_dir)
    detail = f"{status}\n{cluster.describe(job_dir)}"
    assert status["state"] == "COMPLETED", detail
    attempts = _attempts(job_dir)
    assert [a["kind"] for a in attempts] == ["stuck", "completed"], (attempts, detail)
    assert attempts[0]["blamed_rank"] == 1 and attempts[0]["blamed_node"] == "node2", attempts
    batch = (job_dir / "logs" / f"slurm-{job_id}.out").read_text(errors="replace")
    assert "orch: restart: leaving out node2 (blamed); running on node1, node3" in batch, batch


def test_a_blamed_node_without_a_spare_is_left_out_by_submitting_the_job_again(slurm_cluster: SlurmCluster,
                                                                               tmp_path: Path) -> None:
    """A one-node job forced onto node2 loses its rank to kill -9 in epoch 2: node2 is blamed, no spare is
    allocated, so the job is submitted again with --exclude=node2; the new job runs on another node,
    resumes from the epoch-1 checkpoint as attempt 1 and ends COMPLETED with the parameters of a run
    that never failed."""
    cluster = slurm_cluster
    first, job_dir = cluster.submit(str(FAULTY), "--nodes", "1", "--gpus", "1", "--cpus-per-task", "1",
                                    "--nodelist", "node2", "--max-restarts", "2", "epochs=2", "fault=kill",
                                    "fault_rank=0", "fault_step=80", "fault_restart=0",
                                    cluster_yaml=_sync_saves(cluster, tmp_path))
    deadline = time.monotonic() + 240
    while (job_dir / "job_id").read_text().strip() == first and time.monotonic() < deadline:
        if cluster.status(first)["terminal"]:
            break
        time.sleep(0.5)
    second = (job_dir / "job_id").read_text().strip()
    assert second != first, f"{cluster.status(first)}\n{cluster.describe(job_dir)}"
    status = cluster.wait_done(second, timeout=300, job_dir=job_dir)
    detail = f"{status}\n{cluster.describe(job_dir)}"
    assert status["state"] == "COMPLETED" and status["nodes"] != "node2", detail
    attempts = _attempts(job_dir)
    assert [(a["attempt"], a["job"], a["kind"] == "completed") for a in attempts] == \
        [(0, first, False), (1, second, True)], (attempts, detail)
    assert attempts[0]["blamed_node"] == "node2" and attempts[0]["resubmitted_as"] == second, attempts
    assert attempts[1]["resumed_step"] == 64, attempts  # the epoch-1 checkpoint (64 steps per epoch on one rank)
    assert isinstance(attempts[0]["recovery_s"], float), attempts
    log = (job_dir / "logs" / f"slurm-{first}.out").read_text(errors="replace")
    assert "submitting the job again without it" in log and f"job {second} runs the next attempt" in log, log
    human = cluster.orch("status", second, "--cluster", str(cluster.cluster_yaml), check=True).stdout
    assert f"submitted again without node2 as job {second}" in human, human
    # the session's cluster remembers no bad node (launcher.bad_node_ttl 0): the batch log says so, as orch nodes
    assert "recorded as bad" not in log and "not remembered for later jobs (launcher.bad_node_ttl is 0" in log, log
    nodes = json.loads(cluster.orch("nodes", "--cluster", str(cluster.cluster_yaml), "--json", check=True).stdout)
    assert nodes["nodes"] == [], nodes
    # the id orch submit printed still names the job: status and logs follow the job index to the folder
    said = f"{first} -> {second} (resubmitted without node2)"
    old_status = cluster.orch("status", first, "--cluster", str(cluster.cluster_yaml), "--json", check=True).stdout
    row = json.loads(old_status)
    assert (row["job_id"], row["job_dir"], row["followed"]) == (second, str(job_dir), said), old_status
    old_logs = cluster.orch("logs", first, check=True)
    assert f"orch: job {said}: the logs of job {second} follow" in old_logs.stderr, old_logs.stderr
    assert f"orch: job {second} (attempt 1, requeue 0) on " in old_logs.stdout, old_logs.stdout
    result = json.loads((job_dir / "result.json").read_text())
    env = {**os.environ, "ORCH_DATA_DIR": os.environ.get("ORCH_DATA_DIR", str(tmp_path))}
    local = subprocess.run([ORCH, "run", str(FAULTY), "--nproc", "1", "--job-root", str(tmp_path), "--json",
                            "epochs=2"], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert local.returncode == 0, local.stderr
    assert result["param_digest"] == json.loads(local.stdout)["result"]["param_digest"]
