"""Preemption of framework scripts on the local Slurm cluster (2 nodes): the Lightning callback and the HF
``TrainerCallback`` checkpoint on ``scancel --signal=USR2 --full``, exit 75, Slurm requeues the job, and the
resumed run ends with the parameters of the same script submitted without the signal (bit for bit)."""

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

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "tests" / "scripts"


def _submit(cluster: SlurmCluster, cwd: Path, script: Path, out: Path, *extra: str) -> tuple[str, Path]:
    proc = subprocess.run([ORCH, "submit", str(script), "--nodes", "2", "--gpus", "1", "--cluster",
                           str(cluster.cluster_yaml), "--json", "--", "--out", str(out), *extra],
                          cwd=cwd, env=cluster.env, capture_output=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    data = json.loads(proc.stdout)
    return str(data["job_id"]), Path(data["job_dir"])


@pytest.mark.parametrize(("framework", "script"), [("lightning", "lightning_preemptible.py"),
                                                   ("transformers", "hf_preemptible.py")])
def test_preempted_framework_script_requeues_and_ends_as_an_uninterrupted_run(
        slurm_cluster: SlurmCluster, tmp_path: Path, framework: str, script: str) -> None:
    pytest.importorskip(framework)
    plain, preempted = tmp_path / "plain", tmp_path / "preempted"
    plain_id, plain_dir = _submit(slurm_cluster, tmp_path, SCRIPTS / script, plain)
    job_id, job_dir = _submit(slurm_cluster, tmp_path, SCRIPTS / script, preempted, "--wait-at", "3")
    deadline = time.monotonic() + 180
    while not all((preempted / f"ready{r}").exists() for r in (0, 1)):
        assert time.monotonic() < deadline, slurm_cluster.describe(job_dir)
        time.sleep(0.2)
    signalled = slurm_cluster.client("scancel", "--signal=USR2", "--full", job_id)
    assert signalled.returncode == 0, signalled.stderr
    slurm_cluster.wait(job_id, lambda s: s["state"] == "PENDING" and (s["restarts"] or 0) >= 1, 120, job_dir,
                       "PENDING after a requeue")
    update = slurm_cluster.client("scontrol", "update", f"JobId={job_id}", "StartTime=now+2")
    assert update.returncode == 0, update.stderr
    final = slurm_cluster.wait_done(job_id, timeout=300, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    done = slurm_cluster.wait_done(plain_id, timeout=300, job_dir=plain_dir)
    assert done["state"] == "COMPLETED", slurm_cluster.describe(plain_dir)
    for rank in (0, 1):
        first, second = (json.loads((out / f"params{rank}.json").read_text()) for out in (plain, preempted))
        assert second["params"] == first["params"]
        if framework == "lightning":
            assert (first["resumed_at"], second["resumed_at"]) == (0, 4)
        else:
            assert first["resumed_from"] is None and second["resumed_from"] == str(preempted / "hf" / "checkpoint-4")
