"""A real Slurm requeue with tracking on: the preempted and requeued job leaves ONE strictly increasing
``train/loss`` step sequence in TensorBoard and ``steps.jsonl``, and ONE W&B run id (offline) across
both attempts; a script submitted with ``--track wandb`` sees the same WANDB_RUN_ID after its requeue."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from orchestrator.spec.tracking import STEPS_FILE, TB_DIR, run_id

if TYPE_CHECKING:
    from conftest import Preempted, PreemptedScript, SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

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


def test_script_sees_the_same_wandb_run_id_after_a_requeue(preempted_script: PreemptedScript) -> None:
    """preemptible.py on 2 nodes with ``--track wandb``, requeued once (conftest's ``preempted_script``, the job
    test_e2e_script.py's preemption test reads too); the script never imports wandb: it records what it was given."""
    out, job_dir = preempted_script.out, preempted_script.job_dir
    for rank in range(2):
        first, second = (json.loads((out / f"seen{rank}-{n}.json").read_text()) for n in (0, 1))
        assert first["WANDB_RUN_ID"] == second["WANDB_RUN_ID"] == run_id(job_dir)
        assert first["ORCH_RUN_ID"] == second["ORCH_RUN_ID"] == run_id(job_dir)
        assert first["WANDB_RESUME"] == "allow"
