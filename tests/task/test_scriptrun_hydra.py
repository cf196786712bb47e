"""A real Hydra app under ``orch run --nproc 2`` (orchestrator/task/scriptrun.py, spec/hydra.py): every
rank's run directory is ``<job folder>/hydra``, rank 0 keeps Hydra's ``.hydra/`` record and log, rank 1
logs to its own file, nothing lands in ``outputs/`` of the working directory, and the script's own
overrides still apply; a run directory the user gives is left alone."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support import ORCH, ROOT, clean_environ

pytest.importorskip("hydra")
pytestmark = pytest.mark.slow

APP = ROOT / "tests" / "scripts" / "hydra_app.py"
TIMEOUT = 240


def _run(cwd: Path, *args: str) -> Path:
    proc = subprocess.run([ORCH, "run", str(APP), "--nproc", "2", "--job-root", str(cwd / "jobs"), "--", *args],
                          cwd=cwd, env=clean_environ(PYTHONPATH=str(ROOT)), capture_output=True, timeout=TIMEOUT,
                          check=False)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    [job_dir] = [p for p in (cwd / "jobs").iterdir() if (p / "job.json").is_file()]
    return job_dir


def test_every_rank_of_a_hydra_app_runs_in_the_job_folders_run_directory(tmp_path: Path) -> None:
    job_dir = _run(tmp_path, "lr=0.1", "steps=3")
    run_dir = job_dir / "hydra"
    records = [json.loads((run_dir / f"rank{r}.json").read_text(encoding="utf-8")) for r in range(2)]
    assert [(r["rank"], r["world_size"], r["run_dir"]) for r in records] == [(0, 2, str(run_dir)), (1, 2, str(run_dir))]
    assert records[0]["checksum"] == records[1]["checksum"]
    assert records[0]["cwd"] == str(tmp_path)  # hydra.job.chdir stays the app's choice (false)
    assert not (tmp_path / "outputs").exists()
    assert "lr: 0.1" in (run_dir / ".hydra" / "config.yaml").read_text(encoding="utf-8")
    assert "rank 0 done" in (run_dir / "hydra_app.log").read_text(encoding="utf-8")
    assert "rank 1 done" in (run_dir / "hydra_app_rank1.log").read_text(encoding="utf-8")
    assert "rank 1 done" not in (run_dir / "hydra_app.log").read_text(encoding="utf-8")


def test_a_run_directory_of_the_users_own_is_kept(tmp_path: Path) -> None:
    job_dir = _run(tmp_path, "hydra.run.dir=mine")  # both ranks: the same literal folder, the user's choice
    assert sorted(p.name for p in (tmp_path / "mine").glob("rank*.json")) == ["rank0.json", "rank1.json"]
    assert not (job_dir / "hydra").exists()
