"""``orch logs JOB`` of a real script job on the local Slurm cluster: rank 0's output with
the batch script's own lines, found without the submit's ``--cluster`` (the index of submitted jobs),
``--all-ranks`` with a prefix per rank, and ``orch status`` of the script trusting Slurm's answer (the
folder's submit time and name agree with Slurm's SubmitTime and JobName)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import ORCH

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SCRIPT = """\
import os
import torch.distributed as dist

dist.init_process_group("gloo")
print(f"hello from rank {dist.get_rank()} of {dist.get_world_size()}", flush=True)
dist.barrier()
dist.destroy_process_group()
"""


def test_logs_of_a_script_job_without_cluster(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "hello.py").write_text(SCRIPT)
    # 2 nodes x 1: rank 0's log holds rank 0's line alone and --all-ranks prefixes each rank's; two more ranks cost
    # two start-ups and proved nothing more
    submit = subprocess.run([ORCH, "submit", "hello.py", "--cluster", str(slurm_cluster.cluster_yaml),
                             "--nodes", "2", "--gpus", "1", "--json"], cwd=project, env=slurm_cluster.env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert submit.returncode == 0, submit.stderr
    data = json.loads(submit.stdout)
    job_id, job_dir = str(data["job_id"]), Path(data["job_dir"])
    final = slurm_cluster.wait_done(job_id, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    assert final["name"] == "proj/hello" and final["reused"] is None

    elsewhere = tmp_path / "elsewhere"  # no cluster.yaml here and no --cluster: the index finds the job
    elsewhere.mkdir()

    def orch(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([ORCH, *args], cwd=elsewhere, env=slurm_cluster.env, capture_output=True, text=True,
                              timeout=60, check=False)

    logs = orch("logs", job_id)
    assert logs.returncode == 0, logs.stderr
    lines = logs.stdout.splitlines()
    assert "hello from rank 0 of 2" in lines and "hello from rank 1 of 2" not in lines
    start = next(i for i, line in enumerate(lines) if line.startswith(f"orch: job {job_id} (attempt 0, requeue 0) on "))
    assert start < lines.index("hello from rank 0 of 2")  # the batch script's line first, then rank 0's
    every = orch("logs", job_id, "--all-ranks")
    assert every.returncode == 0, every.stderr
    assert {f"[rank {r}] hello from rank {r} of 2" for r in range(2)} <= set(every.stdout.splitlines())
    status = orch("status", job_id, "--json")
    assert status.returncode == 0, status.stderr
    row = json.loads(status.stdout)
    assert row["job_dir"] == str(job_dir) and row["state"] == "COMPLETED" and row["reused"] is None
    submitted = json.loads((job_dir / "submitted.json").read_text())
    assert submitted["job_id"] == job_id and submitted["job_name"] == "proj/hello"
