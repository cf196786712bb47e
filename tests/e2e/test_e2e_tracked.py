"""On the local Slurm cluster: a SIGKILLed ``orch submit`` still leaves a tracked job, and the
batch log Slurm creates is private.

A wrapper ``sbatch`` first on PATH runs the real sbatch, then SIGKILLs ``orch submit`` (its parent)
before it can record the id, and prints the id as sbatch did. The job folder's ``job_id`` holds only the
blanks orch reserved; when Slurm starts the job, the batch script records its own id, and
``orch status FOLDER`` follows the job to the end. The batch log (created by slurmd with the umask sbatch
handed over) and every file of the folder have no group or other bits.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

ORCH = shutil.which("orch", path=str(Path(sys.executable).parent)) or "orch"
SMOKE_FAST = ["epochs=1", "samples=256", "test_samples=64"]


def _killing_sbatch(slurm_cluster: SlurmCluster, tmp_path: Path) -> tuple[dict[str, str], Path]:
    """(the environment, the file the job id lands in) of an sbatch that queues for real, then SIGKILLs the
    ``orch submit`` that called it before orch can record the id."""
    real = shutil.which("sbatch", path=slurm_cluster.env.get("PATH"))
    assert real is not None
    wrapper = tmp_path / "bin" / "sbatch"
    wrapper.parent.mkdir()
    # the answer is noted before the kill: the test reads it as soon as orch is dead
    wrapper.write_text(f"#!/bin/bash\nout=$({real} \"$@\") || exit $?\n"
                       "printf '%s\\n' \"$out\" >\"$(dirname -- \"$0\")/queued\"\n"
                       "kill -KILL \"$PPID\"\necho \"$out\"\n",
                       encoding="utf-8")
    wrapper.chmod(0o755)
    return {**slurm_cluster.env, "PATH": f"{wrapper.parent}{os.pathsep}{slurm_cluster.env['PATH']}"}, \
        wrapper.parent / "queued"


def test_sigkilled_submit_leaves_a_tracked_private_job(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    env, queued = _killing_sbatch(slurm_cluster, tmp_path)
    before = set(slurm_cluster.job_root.iterdir()) if slurm_cluster.job_root.exists() else set()
    proc = subprocess.run([ORCH, "submit", "smoke", "--cluster", str(slurm_cluster.cluster_yaml), "--json",
                           *SMOKE_FAST], capture_output=True, text=True, env=env, timeout=120, check=False,
                          preexec_fn=lambda: os.umask(0o022))
    assert proc.returncode == -9, proc.stderr
    job_id = queued.read_text(encoding="utf-8").strip().split(";")[0]
    [job_dir] = set(slurm_cluster.job_root.iterdir()) - before
    deadline = time.monotonic() + 120
    while (job_dir / "job_id").read_text(encoding="ascii").strip() != job_id:  # blanks until the job starts
        assert time.monotonic() < deadline, slurm_cluster.describe(job_dir)
        time.sleep(1)
    final = slurm_cluster.wait_done(job_id, job_dir=job_dir)
    assert (job_dir / "job_id").read_text(encoding="ascii") == f"{job_id}\n"
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    folder = slurm_cluster.orch("status", str(job_dir), "--json", check=True)
    assert job_id in folder.stdout
    for path in [job_dir, *job_dir.rglob("*")]:
        assert not stat.S_IMODE(path.lstat().st_mode) & 0o077, f"{path} is not private"
    assert (job_dir / "logs" / f"slurm-{job_id}.out").is_file()


def test_sigkilled_submit_of_a_held_job_is_found_by_its_token(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """The job stays pending (held), so its batch script never records its id: ``orch status FOLDER``
    finds it by the folder's token (its ``--comment``, one ``squeue --me`` call), and ``orch cancel FOLDER``
    cancels it."""
    env, queued = _killing_sbatch(slurm_cluster, tmp_path)
    before = set(slurm_cluster.job_root.iterdir()) if slurm_cluster.job_root.exists() else set()
    proc = subprocess.run([ORCH, "submit", "smoke", "--cluster", str(slurm_cluster.cluster_yaml), "--sbatch-arg",
                           "hold", *SMOKE_FAST], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == -9, proc.stderr
    job_id = queued.read_text(encoding="utf-8").strip().split(";")[0]
    [job_dir] = set(slurm_cluster.job_root.iterdir()) - before
    assert (job_dir / "job_id").read_text(encoding="ascii").strip() == ""
    where = ["--cluster", str(slurm_cluster.cluster_yaml)]
    status = slurm_cluster.orch("status", str(job_dir), "--json", *where, check=True)
    assert f'"job_id": "{job_id}"' in status.stdout and "PENDING" in status.stdout, status.stdout
    assert (job_dir / "job_id").read_text(encoding="ascii") == f"{job_id}\n"
    submitted = json.loads((job_dir / "submitted.json").read_text(encoding="utf-8"))  # as a whole submit's
    assert (submitted["job_id"], submitted["job_dir"]) == (job_id, str(job_dir)), submitted
    by_id = slurm_cluster.orch("status", job_id, "--json", *where, check=True)  # the index finds it, not "reused"
    row = json.loads(by_id.stdout)
    assert (row["job_dir"], row.get("reused")) == (str(job_dir), None), row
    cancel = slurm_cluster.orch("cancel", str(job_dir), *where, check=True)
    assert f"cancelled {job_id}" in cancel.stdout
