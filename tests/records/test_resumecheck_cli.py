"""Damaged resume folders are refused before any rank starts, through the real CLI
(``orch run --resume``, 2 gloo ranks) and the rendered batch script (stub srun): the checkpoint's sidecar
(``latest.pt.json``) is checked against job.json first; the ranks' own check stays the second line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import sharedruns
from support import ORCH, ROOT, TESTS, clean_environ

from orchestrator.records.resumecheck import JobIdentity
from orchestrator.slurm.plan import SubmitPlan, write_job_dir
from orchestrator.spec.runconfig import read_run_config

if TYPE_CHECKING:
    from support import Stubs

FAULTY = TESTS / "jobs" / "faulty.py"
SMOKE = ROOT / "jobs" / "smoke.py"
SMALL = ["samples=64", "test_samples=16", "epochs=1"]

pytestmark = pytest.mark.slow


def orch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, *args], capture_output=True, text=True, cwd=cwd, timeout=300, check=False,
                          env=clean_environ(PYTHONPATH=os.environ.get("PYTHONPATH", "")))


def new_run(root: Path, *args: str) -> Path:
    proc = orch("run", *args, "--job-root", str(root), cwd=root.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (folder,) = [p for p in root.iterdir() if p.is_dir()]
    return folder


@pytest.fixture
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Finished 2-rank runs: smoke, and "wide" (smoke's data with another model, under another name), made once
    per session (``sharedruns.once``); the tests change copies of them only (``copy_of``)."""
    def make(base: Path) -> dict[str, Path]:
        wide = base / "wide.py"
        wide.write_text(SMOKE.read_text().replace('name="smoke"', 'name="wide"')
                        .replace("nn.Linear(10, 10)", "nn.Linear(10, 12)"))
        return {"smoke": new_run(base / "a", "smoke", "--nproc", "2", *SMALL),
                "wide": new_run(base / "b", str(wide), "--nproc", "2", *SMALL)}
    return sharedruns.once(tmp_path_factory, "resumecheck-smoke-and-wide", make)


def copy_of(folder: Path, tmp_path: Path) -> Path:
    target = tmp_path / "jobs" / folder.name
    target.parent.mkdir(mode=0o750)
    shutil.copytree(folder, target)
    data = json.loads((target / "job.json").read_text())
    data["job_dir"] = str(target)
    (target / "job.json").write_text(json.dumps(data))
    return target


def refused_before_ranks(folder: Path, *args: str) -> str:
    """``orch run --resume``: exit 2, a HINT, no traceback, no rank started, job.json untouched."""
    log = folder / "logs" / "local-rank0.out"
    before, job_json = log.stat().st_mtime_ns, (folder / "job.json").read_text()
    proc = orch("run", "--resume", str(folder), *args, "epochs=2", cwd=folder.parent)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "orch: error:" in proc.stderr and "HINT:" in proc.stderr and "Traceback" not in proc.stderr
    assert log.stat().st_mtime_ns == before, "a rank started"
    assert (folder / "job.json").read_text() == job_json, "the refused resume changed job.json"
    return proc.stderr


def _copy_checkpoints(source: Path, target: Path, names: tuple[str, ...]) -> None:
    for name in names:
        shutil.copy2(source / "checkpoints" / name, target / "checkpoints" / name)


def test_another_jobs_checkpoints_are_refused_before_any_rank_starts(runs: dict[str, Path],
                                                                      tmp_path: Path) -> None:
    folder = copy_of(runs["smoke"], tmp_path)
    _copy_checkpoints(runs["wide"], folder, ("latest.pt", "latest.pt.json"))
    err = refused_before_ranks(folder)
    assert f"the checkpoint {folder}/checkpoints/latest.pt was written by job 'wide', not by 'smoke'" in err


def test_another_models_checkpoint_file_is_refused_before_any_rank_starts(runs: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    folder = copy_of(runs["smoke"], tmp_path)
    _copy_checkpoints(runs["wide"], folder, ("latest.pt",))  # the file alone, its own sidecar stays
    err = refused_before_ranks(folder)
    assert f"{folder}/checkpoints/latest.pt is not the checkpoint orch wrote there" in err
    assert f"delete {folder}/checkpoints/latest.pt.json" in err


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.update(epoch=-1), "epoch: Input should be greater than or equal to 0"),
    (lambda d: d.update(ranks=0), "ranks hold 0 entries"),
    (lambda d: d.update(job="mnist"), "job_digest does not match"),
])
def test_a_hand_edited_sidecar_is_refused_before_any_rank_starts(runs: dict[str, Path], tmp_path: Path,
                                                                 edit: Callable[[dict[str, Any]], None],
                                                                 message: str) -> None:
    folder = copy_of(runs["smoke"], tmp_path)
    path = folder / "checkpoints" / "latest.pt.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    assert message in refused_before_ranks(folder)


def test_without_sidecars_the_ranks_still_refuse_another_job(runs: dict[str, Path], tmp_path: Path) -> None:
    """A folder of an older orch (no sidecars): the check every rank makes as it loads (second line)."""
    folder = copy_of(runs["smoke"], tmp_path)
    _copy_checkpoints(runs["wide"], folder, ("latest.pt",))
    for sidecar in (folder / "checkpoints").glob("*.json"):
        sidecar.unlink()
    proc = orch("run", "--resume", str(folder), "epochs=2", cwd=folder.parent)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "written by job 'wide', not by 'smoke'" in proc.stderr and "HINT:" in proc.stderr


def test_a_mid_epoch_checkpoint_needs_its_world_size_then_resumes(tmp_path: Path) -> None:
    """Preempted in the middle of epoch 2 on 2 ranks: --nproc 1 is refused before any rank starts (the
    world size may change only between epochs); the same resume on 2 ranks continues at that step."""
    folder = new_run(tmp_path / "jobs", str(FAULTY), "--nproc", "2", "epochs=2", "samples=1001",
                     "signal_step=40", "signal_rank=1")
    step = int((folder / "requeue").read_text().split()[-1])
    sidecar = json.loads((folder / "checkpoints" / "latest.pt.json").read_text())
    assert (sidecar["epoch"], sidecar["step"], sidecar["world_size"], sidecar["ranks"]) == (1, step, 2, 2)
    log = folder / "logs" / "local-rank0.out"
    before = log.stat().st_mtime_ns
    proc = orch("run", "--resume", str(folder), "--nproc", "1", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"stopped in the middle of epoch 2 (step {step}) with world size 2" in proc.stderr
    assert "resume with the same number of ranks (--nproc)" in proc.stderr
    assert log.stat().st_mtime_ns == before, "a rank started"
    assert read_run_config(folder).tasks_per_node == 2, "the refused resume changed job.json"
    proc = orch("run", "--resume", str(folder), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"resuming from checkpoint at epoch 2, step {step}" in log.read_text()
    assert json.loads((folder / "result.json").read_text())["status"] == "completed"


# --- Slurm: the batch script stops before srun ------------------------------------------------------------------

def _slurm_job(make_plan: Callable[..., SubmitPlan], tmp_path: Path, identity: JobIdentity | None) -> Path:
    from orchestrator.runtime.checkpoint import write_atomic

    job_dir = write_job_dir(make_plan(python=sys.executable, job_root=tmp_path / "jobs", nodes=1, gpus=2))
    cfg = read_run_config(job_dir)
    import torch

    state = {"format": 1, "model": {"w": torch.zeros(3)}, "optimizer": {}, "epoch": 1, "step": 0,
             "world_size": cfg.world_size, "batch_size": 16, "grad_accum": 1,
             "ranks": [{"rng": {}, "tally": None}] * cfg.world_size, "params": cfg.params, "job": cfg.job_name}
    write_atomic(state, job_dir / "checkpoints", identity or JobIdentity.of(cfg))
    return job_dir


def _batch(job_dir: Path, stubs: Stubs) -> subprocess.CompletedProcess[str]:
    env = stubs.env(SLURM_JOB_ID="77", SLURM_JOB_NODELIST="gpu001", SLURM_JOB_NUM_NODES="1",
                    SLURM_RESTART_COUNT="1")
    return subprocess.run(["bash", str(job_dir / "sbatch.sh")], env=env, capture_output=True, text=True,
                          timeout=120, cwd=job_dir, check=False)


@pytest.mark.parametrize("damaged", [False, True])
def test_a_requeued_job_with_another_jobs_checkpoint_stops_before_srun(
        make_plan: Callable[..., SubmitPlan], tmp_path: Path, stubs: Stubs, damaged: bool) -> None:
    job_dir = _slurm_job(make_plan, tmp_path, JobIdentity("other", "/elsewhere/other.py") if damaged else None)
    started = time.time()
    proc = _batch(job_dir, stubs)
    if not damaged:
        assert proc.returncode == 0, proc.stderr
        assert len(stubs.records("srun")) == 1
        return
    assert proc.returncode == 2, proc.stderr
    assert "orch: error: the checkpoint" in proc.stderr and "was written by job 'other'" in proc.stderr
    assert "HINT:" in proc.stderr and "rank ?" not in proc.stderr and "Traceback" not in proc.stderr
    assert stubs.records("srun") == [], "nothing is srun'd"
    assert time.time() - started < 60
