"""Bring your own script on the local Slurm cluster: the unmodified torchrun-style
``tests/scripts/ddp_train.py`` submitted with ``orch submit SCRIPT --nodes 2 --gpus 2 -- ARGS`` from
another directory (4 gloo ranks on node1 and node2), and with ``--gpus-per-task 2`` (each task sees
exactly its two fake GPUs). A hostile SBATCH_TIMELIMIT in the submitting shell changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from support import ORCH

from orchestrator.env import masterport
from orchestrator.env.taskenv import is_loopback
from orchestrator.spec.snapshot import Snapshot, relocate

if TYPE_CHECKING:
    from conftest import PreemptedScript, SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "tests" / "scripts"
DDP = SCRIPTS / "ddp_train.py"
HOSTILE = ["with space", "it's", 'say "hi"', "$(touch /tmp/orch-pwned-slurm)", "`id`", "", "new\nline",
           "back\\slash", "%j %t", "--", "unicode ✓", os.fsdecode(b"\xff\xfe\x80")]


def _submit(cluster: SlurmCluster, cwd: Path, *args: str) -> tuple[str, Path]:
    env = {**cluster.env, "SBATCH_TIMELIMIT": "1", "SBATCH_PARTITION": "nosuchpartition"}
    proc = subprocess.run([ORCH, "submit", *args], cwd=cwd, env=env, capture_output=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert b"SBATCH_PARTITION, SBATCH_TIMELIMIT" in proc.stderr  # said, not silently dropped
    data = json.loads(proc.stdout)
    return str(data["job_id"]), Path(data["job_dir"])


def _records(out: Path, n: int) -> list[dict[str, Any]]:
    return [json.loads((out / f"rank{r}.json").read_text(encoding="utf-8")) for r in range(n)]


def test_unmodified_script_on_two_nodes(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out_ddp, out_k2 = tmp_path / "ddp", tmp_path / "k2"
    yaml_arg = ["--cluster", str(slurm_cluster.cluster_yaml), "--json"]
    rel = os.path.relpath(DDP, elsewhere)
    ddp_id, ddp_dir = _submit(slurm_cluster, elsewhere, rel, "--nodes", "2", "--gpus", "2", *yaml_arg, "--",
                              "--out", str(out_ddp), "--steps", "3", "--", *HOSTILE)
    k2_id, k2_dir = _submit(slurm_cluster, elsewhere, rel, "--nodes", "2", "--gpus", "4", "--gpus-per-task", "2",
                            *yaml_arg, "--", "--out", str(out_k2), "--steps", "2")

    final = slurm_cluster.wait_done(ddp_id, job_dir=ddp_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(ddp_dir)
    shown = slurm_cluster.client("scontrol", "show", "job", ddp_id).stdout
    assert "TimeLimit=00:10:00" in shown and "Partition=debug" in shown  # SBATCH_* did not win
    records = _records(out_ddp, 4)
    # the script runs from the code snapshot taken at submit; the submit directory is outside it
    snap = Snapshot.model_validate(json.loads((ddp_dir / "job.json").read_text(encoding="utf-8"))["snapshot"])
    port = masterport.master_port(ddp_id, 0, slurm_cluster.port_range())
    master = records[0]["env"]["MASTER_ADDR"]
    for rank, rec in enumerate(records):
        assert rec["env"] == {
            "RANK": str(rank), "LOCAL_RANK": str(rank % 2), "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2",
            "GROUP_RANK": str(rank // 2), "GROUP_WORLD_SIZE": "2", "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": "4",
            "ROLE_NAME": "default", "MASTER_ADDR": master, "MASTER_PORT": str(port),
            "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "5", "TORCHELASTIC_RUN_ID": ddp_id,
            # the test cluster's nodes are all this host (NodeAddr 127.0.0.1): the store is on loopback
            "TORCHELASTIC_USE_AGENT_STORE": str(is_loopback(master)), "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
            "OMP_NUM_THREADS": "1", "TORCHELASTIC_ERROR_FILE": str(ddp_dir / "logs" / f"rank{rank}.error.json"),
        }
        expected = ["--out", str(out_ddp), "--steps", "3", "--", *HOSTILE]
        assert [bytes.fromhex(h) for h in rec["argv_hex"]] == [os.fsencode(a) for a in expected]
        assert (rec["cwd"], rec["path0"], rec["argv0"]) == (str(elsewhere), relocate(str(SCRIPTS), snap),
                                                            relocate(str(DDP), snap))
        assert rec["argv0"] != str(DDP)
        assert (rec["backend"], rec["world"]) == ("gloo", 4)
        # K = 1: the node's two GPUs (which ones depends on the cluster's other jobs), as torchrun leaves them
        assert len(rec["cuda_visible"].split(",")) == 2
        assert rec["cuda_visible"] == records[rank - rank % 2]["cuda_visible"]
    assert all(rec["params"] == records[0]["params"] for rec in records)
    assert not Path("/tmp/orch-pwned-slurm").exists()

    final = slurm_cluster.wait_done(k2_id, job_dir=k2_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(k2_dir)
    k2 = _records(out_k2, 4)
    for node in (0, 1):  # each task sees exactly its 2 of the node's 4 GPUs
        first, second = (set(k2[2 * node + i]["cuda_visible"].split(",")) for i in (0, 1))
        assert len(first) == len(second) == 2 and not first & second
    assert [r["env"]["LOCAL_WORLD_SIZE"] for r in k2] == ["2"] * 4
    assert all(rec["params"] == k2[0]["params"] for rec in k2)


def test_preempted_script_requeues_and_sees_the_restart_count(preempted_script: PreemptedScript,
                                                              slurm_cluster: SlurmCluster) -> None:
    """The contract: the signal reaches the script, exit 75 requeues, the next run has restart count 1. The job is
    conftest's ``preempted_script`` (submitted as _submit does, hostile SBATCH_* included, with ``--track wandb``:
    test_e2e_tracking.py reads its W&B run id)."""
    assert "SBATCH_PARTITION, SBATCH_TIMELIMIT" in preempted_script.submit_stderr  # said, not silently dropped
    job_id, job_dir, out = preempted_script.job_id, preempted_script.job_dir, preempted_script.out
    for rank in (0, 1):
        first = json.loads((out / f"seen{rank}-0.json").read_text())
        second = json.loads((out / f"seen{rank}-1.json").read_text())
        assert second["TORCHELASTIC_RESTART_COUNT"] == "1" and second["TORCHELASTIC_RUN_ID"] == job_id
        assert second["ORCH_JOB_DIR"] == str(job_dir)
        ports = slurm_cluster.port_range()
        assert second["MASTER_PORT"] == str(masterport.master_port(job_id, 1, ports)) != first["MASTER_PORT"]


def test_script_without_gpus_gets_every_gpu_of_its_nodes(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """``orch submit train.py --nodes 2`` (no --gpus) runs one rank per GPU of the partition's
    nodes (here a partition of 2 GPUs per node: 4 ranks), and the submit line says so."""

    def two_gpus(data: dict[str, Any]) -> None:
        data["partitions"][0]["gpus_per_node"] = 2

    yaml_path = slurm_cluster.derived_cluster_yaml(tmp_path / "cluster.yaml", two_gpus)
    out = tmp_path / "out"
    proc = subprocess.run([ORCH, "submit", str(DDP), "--nodes", "2", "--cluster", str(yaml_path), "--",
                           "--out", str(out), "--steps", "2"], cwd=tmp_path, env=slurm_cluster.env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "resources: 2 nodes x 2 GPUs (all of partition debug's; --gpus N to change)" in proc.stdout, proc.stdout
    job_id = proc.stdout.split("submitted job ", 1)[1].split()[0]
    job_dir = Path(proc.stdout.split("job folder: ", 1)[1].split("\n", 1)[0])
    final = slurm_cluster.wait_done(job_id, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    records = _records(out, 4)
    assert [r["env"]["WORLD_SIZE"] for r in records] == ["4"] * 4
    assert [r["env"]["LOCAL_WORLD_SIZE"] for r in records] == ["2"] * 4
