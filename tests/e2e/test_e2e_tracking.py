"""A real Slurm requeue with tracking on: the preempted and requeued job leaves ONE strictly increasing
``train/loss`` step sequence in TensorBoard and ``steps.jsonl``, and ONE W&B run id (offline) across
both attempts; a script submitted with ``--track wandb`` sees the same WANDB_RUN_ID after its requeue."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from orchestrator.spec.tracking import STEPS_FILE, TB_DIR, run_id

if TYPE_CHECKING:
    from conftest import Preempted, SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def _requeue(slurm_cluster: SlurmCluster, job_id: str, job_dir: Path) -> None:
    signalled = slurm_cluster.client("scancel", "--signal=USR2", "--full", job_id)
    assert signalled.returncode == 0, signalled.stderr
    slurm_cluster.wait(job_id, lambda s: s["state"] == "PENDING" and (s["restarts"] or 0) >= 1, 60, job_dir,
                       "PENDING after a requeue")
    update = slurm_cluster.client("scontrol", "update", f"JobId={job_id}", "StartTime=now+2")
    assert update.returncode == 0, update.stderr
    final = slurm_cluster.wait_done(job_id, timeout=180, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)


def test_requeued_job_continues_its_steps_and_its_wandb_run(slurm_cluster: SlurmCluster,
                                                            request: pytest.FixtureRequest) -> None:
    """The preempted smoke run of conftest's ``preempted_smoke`` (2 x 2 ranks, 12 epochs of 1024 samples in batches of
    8, ``--track wandb`` offline, ``log_every=1``), requeued after its first epoch: the job the API's and the CLI's
    preemption tests read too."""
    pytest.importorskip("wandb")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    preempted: Preempted = request.getfixturevalue("preempted_smoke")
    assert preempted.tracked
    job_id, job_dir = preempted.handle.job_id, preempted.handle.job_dir
    assert preempted.requeued["state"] == "PENDING" and (preempted.requeued["restarts"] or 0) >= 1
    final = slurm_cluster.wait_done(job_id, timeout=180, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    steps = job_dir / STEPS_FILE
    acc = EventAccumulator(str(job_dir / TB_DIR), size_guidance={"scalars": 0})
    acc.Reload()
    seen = [event.step for event in acc.Scalars("train/loss")]
    per_epoch = 1024 // 8 // 4  # 4 ranks
    assert seen == list(range(1, 12 * per_epoch + 1))
    logged = [json.loads(line)["step"] for line in steps.read_text().splitlines() if "train/loss" in line]
    assert logged == seen
    ids = {p.name[len("run-"):-len(".wandb")] for p in (job_dir / "wandb").glob("offline-run-*/run-*.wandb")}
    assert ids == {run_id(job_dir)}
    assert len(list((job_dir / "wandb").glob("offline-run-*"))) == 2


def test_script_sees_the_same_wandb_run_id_after_a_requeue(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    out = tmp_path / "out"  # the script itself never imports wandb: it records what it was given
    job_id, job_dir = slurm_cluster.submit(str(SCRIPTS / "preemptible.py"), "--nodes", "2", "--gpus", "1",
                                           "--track", "wandb", "--", "--out", str(out))
    deadline = time.monotonic() + 120
    while not all((out / f"ready{r}").exists() for r in range(2)):
        assert time.monotonic() < deadline, slurm_cluster.describe(job_dir)
        time.sleep(0.1)
    _requeue(slurm_cluster, job_id, job_dir)
    for rank in range(2):
        first, second = (json.loads((out / f"seen{rank}-{n}.json").read_text()) for n in (0, 1))
        assert first["WANDB_RUN_ID"] == second["WANDB_RUN_ID"] == run_id(job_dir)
        assert first["ORCH_RUN_ID"] == second["ORCH_RUN_ID"] == run_id(job_dir)
        assert first["WANDB_RESUME"] == "allow"
