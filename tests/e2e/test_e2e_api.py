"""The Python API on the real local cluster: orch's own script through sbatch, one job and a job array."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from orchestrator import api
from orchestrator.errors import OrchError, SlurmError
from orchestrator.spec.snapshot import Snapshot, relocate

if TYPE_CHECKING:
    from conftest import Preempted, SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SMALL = {"epochs": 1, "samples": 256, "test_samples": 64, "cpus_per_task": 1}


def test_api_submit_2x2(slurm_env: SlurmCluster) -> None:
    handle = api.submit("smoke", nodes=2, gpus=2, cluster=slurm_env.cluster_yaml, executor="auto", **SMALL)
    assert handle.executor == "slurm" and handle.job_dir.parent == slurm_env.job_root
    assert (handle.job_dir / "job_id").read_text().strip() == handle.job_id
    result = handle.result(timeout=240)
    assert handle.state == "COMPLETED"
    assert result["world_size"] == 4 and result["in_sync"] and len(set(result["param_digests"])) == 1
    assert result["final"]["epoch"] == 1
    assert "epoch 1/1" in handle.logs(0)
    assert all((handle.job_dir / "logs" / f"{handle.job_id}-rank{r}.out").is_file() for r in range(4))
    cfg = json.loads((handle.job_dir / "job.json").read_text())
    shape = (cfg["mode"], cfg["nodes"], cfg["tasks_per_node"], cfg["params"]["samples"])
    assert shape == ("slurm", 2, 2, 256)
    # the CLI sees API jobs like any other
    status = slurm_env.status(handle.job_id)
    assert status["state"] == "COMPLETED" and status["job_dir"] == str(handle.job_dir)


def test_api_sweep_is_one_job_array(slurm_env: SlurmCluster) -> None:
    # one rank an element: the sweep's array, folders, overrides and logs are the API's business, not a world's
    # (test_api_submit_2x2 has its 2 x 2); a second rank each proved nothing more and cost two rank start-ups
    handles = api.sweep("smoke", [{"lr": 0.2}, {"lr": 0.01}], nodes=1, gpus=1, cluster=slurm_env.cluster_yaml,
                        **SMALL)
    ids = [h.job_id for h in handles]
    array = {i.partition("_")[0] for i in ids}
    assert len(array) == 1 and [i.partition("_")[2] for i in ids] == ["0", "1"], ids
    results = [h.result(timeout=240) for h in handles]
    assert [h.state for h in handles] == ["COMPLETED", "COMPLETED"]
    lrs = [json.loads((h.job_dir / "job.json").read_text())["params"]["lr"] for h in handles]
    assert lrs == [0.2, 0.01]
    assert results[0]["param_digest"] != results[1]["param_digest"]  # different runs, really
    assert len({h.job_dir for h in handles}) == 2
    # one array folder, element I in <folder>/I with its logs named by the element's id
    assert [h.job_dir for h in handles] == [handles[0].job_dir.parent / "0", handles[0].job_dir.parent / "1"]
    for handle in handles:
        assert (handle.job_dir / "logs" / f"slurm-{handle.job_id}.out").is_file()
        assert "epoch 1/1" in handle.logs(0)
        assert slurm_env.status(handle.job_id)["job_dir"] == str(handle.job_dir)


def test_api_cancel(slurm_env: SlurmCluster) -> None:
    handle = api.submit("smoke", nodes=1, gpus=1, cluster=slurm_env.cluster_yaml, epochs=100000, samples=256,
                        test_samples=0, checkpoint=False, cpus_per_task=1)
    deadline = time.monotonic() + 60
    while handle.state != "RUNNING":
        assert time.monotonic() < deadline, handle.status()
        time.sleep(0.3)
    handle.cancel()
    assert handle.wait(timeout=60) == "CANCELLED"
    with pytest.raises(OrchError, match=r"without a result\.json"):
        handle.result(timeout=5)


def test_api_preemption_requeues_and_resumes(slurm_env: SlurmCluster, smoke_reference: tuple[str, Path],
                                             preempted_smoke: Preempted) -> None:
    """The API job's batch shell (orch's template) requeues it after the ranks checkpointed; the rerun
    resumes exactly: to the parameters of the same job run uninterrupted (conftest.SMOKE_REFERENCE). The job is
    conftest's ``preempted_smoke`` (queued as api.submit queues), the one preempted run the CLI's and the tracking's
    tests read too; the API follows it through a JobHandle."""
    ref_id, ref_dir = smoke_reference
    handle = preempted_smoke.handle
    assert isinstance(handle, api.JobHandle) and handle.executor == "slurm"
    requeued = preempted_smoke.requeued_api  # the handle's status() while the requeued job waited
    assert requeued.state == "PENDING" and (requeued.restarts or 0) >= 1 and not requeued.terminal, requeued
    resumed = handle.result(timeout=240)
    log = handle.logs(0)
    assert "requeueing job" in handle.logs(None) and "resuming from checkpoint" in log  # batch log, rank 0's
    assert slurm_env.wait_done(ref_id, timeout=240, job_dir=ref_dir)["state"] == "COMPLETED"
    assert resumed["param_digest"] == json.loads((ref_dir / "result.json").read_text())["param_digest"], log


def test_api_refused_by_sbatch(slurm_env: SlurmCluster, tmp_path: Path) -> None:
    def add_partition(data: dict[str, Any]) -> None:
        data["partitions"].append({**data["partitions"][0], "name": "nosuch"})

    cluster_yaml = slurm_env.derived_cluster_yaml(tmp_path / "cluster.yaml", add_partition)
    before = set(slurm_env.job_root.iterdir())
    with pytest.raises(SlurmError, match=r"(?i)invalid partition"):
        api.submit("smoke", cluster=cluster_yaml, partition="nosuch", **SMALL)
    (folder,) = set(slurm_env.job_root.iterdir()) - before
    assert not (folder / "job_id").exists()
    assert "partition" in (folder / "submit_error.txt").read_text().lower()


SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def test_api_submits_a_script_job_with_extras(slurm_env: SlurmCluster, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """``api.submit("train.py", script_args=...)`` is ``orch submit train.py -- ...``: an unmodified DDP script on
    2 nodes x 1 task, its arguments byte-exact, an ``env=`` variable in every rank, an sbatch extra in Slurm. (One
    task a node: what the API passes on is the same for every rank; a script's 2 x 2 world is test_e2e_script.py's.)"""
    out = tmp_path / "out"
    monkeypatch.chdir(tmp_path)  # tasks start in the working directory of the submit
    args = ["--out", str(out), "--steps", "2", "--", "it's", "$(id)", "a b"]
    handle = api.submit(str(SCRIPTS / "ddp_train.py"), script_args=args, nodes=2, gpus=1,
                        cluster=slurm_env.cluster_yaml, executor="slurm", cpus_per_task=1, time="00:05:00",
                        env={"ORCH_TEST_TAG": "from the api"}, sbatch_args={"comment": "orch api e2e"})
    final = slurm_env.wait_done(handle.job_id, job_dir=handle.job_dir)
    assert final["state"] == "COMPLETED", slurm_env.describe(handle.job_dir)
    records = [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]
    cfg = json.loads((handle.job_dir / "job.json").read_text())
    snap = Snapshot.model_validate(cfg["snapshot"])  # the API submits a snapshot of the code, as the CLI
    for rank, rec in enumerate(records):
        assert rec["env"]["RANK"] == str(rank) and rec["env"]["WORLD_SIZE"] == "2"
        assert rec["env"]["TORCHELASTIC_RUN_ID"] == handle.job_id
        assert [bytes.fromhex(h).decode() for h in rec["argv_hex"]] == args
        assert (rec["cwd"], rec["path0"], rec["orch_test_tag"]) == (str(tmp_path), relocate(str(SCRIPTS), snap),
                                                                    "from the api")
        assert rec["params"] == records[0]["params"]  # DDP kept them in sync
    assert cfg["script"]["args"] == args and cfg["env"]["ORCH_TEST_TAG"] == "from the api"
    assert "#SBATCH --comment=" in (handle.job_dir / "sbatch.sh").read_text()
