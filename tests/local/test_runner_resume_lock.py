"""One resume of a job folder at a time: a second concurrent ``orch run --resume`` is refused, and the lock holds
while ``orch run`` runs. Folders come from one real ``orch run smoke`` (copied per test).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, clean_environ


def orch(*args: str, cwd: Path, timeout: float = 300, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env=clean_environ(PYTHONPATH=os.environ.get("PYTHONPATH", "")), **kwargs)


def assert_refused(proc: subprocess.CompletedProcess[str], *names: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "orch: error:" in proc.stderr and "HINT:" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    for name in names:
        assert name in proc.stderr, f"{name!r} not in {proc.stderr!r}"


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished local smoke run (2 epochs, checkpoints), made once; tests copy it."""
    base = tmp_path_factory.mktemp("finished")
    proc = orch("run", "smoke", "--nproc", "1", "--job-root", str(base / "jobs"), "samples=64", "test_samples=16",
                "epochs=1", cwd=base)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (folder,) = (base / "jobs").iterdir()
    assert (folder / "checkpoints" / "latest.pt").is_file()
    return folder


@pytest.fixture
def job_copy(finished_run: Path, tmp_path: Path) -> Path:
    root = tmp_path / "jobs"
    root.mkdir(mode=0o750)
    folder = root / finished_run.name
    shutil.copytree(finished_run, folder, symlinks=True)
    cfg = json.loads((folder / "job.json").read_text())
    cfg["job_dir"] = str(folder)
    (folder / "job.json").write_text(json.dumps(cfg))
    os.chmod(folder / "job.json", 0o640)
    return folder


def resume(folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return orch("run", "--resume", str(folder), *extra, "epochs=2", cwd=folder.parent)


def no_rank_started(folder: Path, before: float) -> bool:
    log = folder / "logs" / "local-rank0.out"
    return not log.exists() or log.stat().st_mtime <= before


# --- one resume of a folder at a time ------------------------------------------------------------------

def test_a_second_concurrent_resume_is_refused(job_copy: Path) -> None:
    from orchestrator.local.runner import job_lock

    with job_lock(job_copy):  # stands for a running orch run of this folder
        before = time.time()
        proc = resume(job_copy)
        assert_refused(proc, "in use by another orch run")
        assert no_rank_started(job_copy, before)
        saved = json.loads((job_copy / "job.json").read_text())
        assert saved["params"]["epochs"] == 1, "the refused resume changed job.json"
    proc = resume(job_copy)  # the lock is gone with its holder
    assert proc.returncode == 0, proc.stderr


def test_the_lock_holds_while_orch_run_runs(job_copy: Path) -> None:
    first = subprocess.Popen([ORCH, "run", "--resume", str(job_copy), "epochs=40", "samples=4096"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=clean_environ(PYTHONPATH=os.environ.get("PYTHONPATH", "")))
    try:
        log = job_copy / "logs" / "local-rank0.out"
        deadline = time.monotonic() + 120
        while "resuming" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
            time.sleep(0.2)
        second = resume(job_copy)
        assert_refused(second, "in use by another orch run")
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=120)
