"""Job folders orch reads back: a canned one (status, list and logs of damaged records), one written by orch's
own writers, and the cluster.yaml that points at their root."""

from __future__ import annotations

import json
from pathlib import Path

CANNED_JOB_ID = "4242"

CANNED_SUBMIT = "2026-11-25T10:00:00"


def make_job(root: Path, name: str = "smoke-20261125-100000-abc123") -> Path:
    from orchestrator.spec.runconfig import RunConfig, run_config_text

    folder = root / name
    (folder / "logs").mkdir(parents=True)
    (folder / "checkpoints").mkdir()
    folder.chmod(0o750)
    config = RunConfig(mode="slurm", job_name="smoke", job_file="/jobs/smoke.py", params={"epochs": 2}, nodes=1,
                       gpus_per_node=0, tasks_per_node=1, cpus_per_task=1, job_dir=str(folder),
                       created="2026-11-25T10:00:00+00:00")
    (folder / "job.json").write_text(run_config_text(config))
    (folder / "job_id").write_text(CANNED_JOB_ID + "\n")
    (folder / "logs" / f"slurm-{CANNED_JOB_ID}.out").write_text(f"orch: job {CANNED_JOB_ID} (restart 0) on node1: hi\n")
    (folder / "logs" / f"{CANNED_JOB_ID}-rank0.out").write_text("epoch 1 loss 0.5\n")
    (folder / "metrics.jsonl").write_text(json.dumps({"epoch": 1, "train_loss": 0.5, "test_loss": 0.4}) + "\n")
    return folder


def cluster_for(tmp_path: Path, root: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text("name: t\npartitions:\n  - {name: debug, nodes: 'node[1-2]', gpus_per_node: 0, cpus_per_node: 4, "
                    f"mem_per_node: 4096}}\nlauncher:\n  job_root: {root}\n")
    return path



def training_job(root: Path, name: str, *, job_id: str | None = None, mode: str = "slurm", world: int = 2,
                 second: int = 0, epochs: int = 2) -> Path:
    """A job folder as orch submit / orch run leave it (orch's own writers): job.json, logs/, checkpoints/ and,
    with ``job_id``, the id sbatch gave. ``second`` orders folders (newer folders have larger ones)."""
    from orchestrator.records.atomic import write_private
    from orchestrator.records.jobcreate import create_job_dir, write_config
    from orchestrator.spec.runconfig import RunConfig

    folder = create_job_dir(root / f"{name}-20261125-10{second // 60:02d}{second % 60:02d}-abc{second:03d}")
    write_config(folder, RunConfig(mode=mode, job_name=name, job_file="/jobs/smoke.py", params={"epochs": epochs},
                                   nodes=1, gpus_per_node=0, tasks_per_node=world, cpus_per_task=1,
                                   job_dir=str(folder), created=f"2026-11-25T10:{second // 60:02d}:{second % 60:02d}"))
    if job_id is not None:
        write_private(folder / "job_id", job_id + "\n")
    return folder
