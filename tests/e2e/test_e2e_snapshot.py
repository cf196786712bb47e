"""Code snapshots on the local Slurm cluster: a script in a git work tree is submitted, edited
right after the submit, and the job runs the submitted version, in its first attempt and after a requeue
(the script asks for one with exit 75; the requeued run sees TORCHELASTIC_RESTART_COUNT 1). With
--no-snapshot the same edit is what runs. ``orch status JOB`` shows the snapshot's commit and digest."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import ORCH

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SCRIPT = """\
import os, sys
attempt = os.environ["TORCHELASTIC_RESTART_COUNT"]
print(f"VERSION {VERSION} attempt {attempt} cwd {os.getcwd()}", flush=True)
print(open("data/input.txt").read().strip(), flush=True)
if attempt == "0" and os.environ.get("ASK_REQUEUE") == "1":
    sys.exit(75)
"""


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    (repo / "data").mkdir(parents=True)
    (repo / "data" / "input.txt").write_text("data read through the snapshot's link\n")
    (repo / ".gitignore").write_text("data/\n")
    (repo / "train.py").write_text("VERSION = 1\n" + SCRIPT)
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "v1"]):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)
    return repo


def _submit(cluster: SlurmCluster, repo: Path, *args: str) -> tuple[str, Path]:
    proc = subprocess.run([ORCH, "submit", "train.py", "--nodes", "1", "--gpus", "1", "--cluster",
                           str(cluster.cluster_yaml), "--json", *args], cwd=repo,
                          env={**cluster.env, "ASK_REQUEUE": "1"}, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    return str(data["job_id"]), Path(data["job_dir"])


def test_the_job_runs_the_submitted_version_after_an_edit_and_a_requeue(slurm_cluster: SlurmCluster,
                                                                       tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    job_id, job_dir = _submit(slurm_cluster, repo)
    (repo / "train.py").write_text("VERSION = 2\n" + SCRIPT)  # right after the submit, before the job ran
    # the same edit without a snapshot: submitted now, so that both jobs run and requeue side by side
    plain_id, plain_dir = _submit(slurm_cluster, repo, "--no-snapshot")
    (repo / "train.py").write_text("VERSION = 3\n" + SCRIPT)
    for one_id, one_dir in ((job_id, job_dir), (plain_id, plain_dir)):
        slurm_cluster.wait(one_id, lambda s: s["state"] == "PENDING" and (s["restarts"] or 0) >= 1, 120, one_dir,
                           "PENDING after the requeue the script asked for")
        update = slurm_cluster.client("scontrol", "update", f"JobId={one_id}", "StartTime=now+2")
        assert update.returncode == 0, update.stderr
    final = slurm_cluster.wait_done(job_id, timeout=180, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    log = (job_dir / "logs" / f"{job_id}-rank0.out").read_text()
    snap = json.loads((job_dir / "job.json").read_text())["snapshot"]
    assert f"VERSION 1 attempt 0 cwd {repo}" in log, log  # the snapshot's code, in the submit directory
    assert f"VERSION 1 attempt 1 cwd {repo}" in log, log
    assert "VERSION 2" not in log and "VERSION 3" not in log and "data read through the snapshot's link" in log
    status = slurm_cluster.orch("status", job_id, "--cluster", str(slurm_cluster.cluster_yaml))
    assert f"# code snapshot: {snap['digest'][:12]} (git {snap['commit'][:12]}; 2 files" in status.stdout, status.stdout

    assert slurm_cluster.wait_done(plain_id, timeout=180, job_dir=plain_dir)["state"] == "COMPLETED"
    time.sleep(0.5)
    plain = (plain_dir / "logs" / f"{plain_id}-rank0.out").read_text()
    assert f"VERSION 3 attempt 1 cwd {repo}" in plain, plain  # in place: the requeue runs the newest edit
