"""A job writes where its user expects: every rank of a script works in the submit directory (the folder
``orch submit``/``orch run`` was started in, as plain ``sbatch`` does), with a code snapshot or without,
while the code still comes from the snapshot (the script's copy, its folder first on ``sys.path``; for
``-m``: the snapshot's copy of the submit directory; relative ``PYTHONPATH`` entries too).

The Slurm side runs the job's real ``sbatch.sh`` under bash with the stub ``srun`` executing the task
(``ORCH_STUB_SRUN_EXEC=1``), from another directory than the submit directory: the task changes there
itself (``#SBATCH --chdir`` says the same to Slurm). Before this, a snapshot job's working directory was
the read-only snapshot, and ``Path("runs/a").mkdir(parents=True)`` failed with ``PermissionError``.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, ROOT, Stubs, batch_task_env, clean_environ

WRITER = """\
import json, os, pathlib, sys
import helper
out = pathlib.Path("runs/a")
out.mkdir(parents=True, exist_ok=True)
(out / ("out%s.txt" % os.environ["RANK"])).write_text("rank " + os.environ["RANK"])
print("RESULT " + json.dumps({"cwd": os.getcwd(), "path0": sys.path[0], "argv0": sys.argv[0],
                              "helper": helper.VERSION, "mod": sys.modules[__name__].__file__}), flush=True)
"""


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    """A plain folder (no git) with a script that writes runs/a/out<RANK>.txt relatively, and its helper."""
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "train.py").write_text(WRITER)
    (root / "helper.py").write_text("VERSION = 1\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "main.py").write_text(WRITER)
    return root


@pytest.fixture
def cluster(write_cluster: Callable[..., Path], tmp_path: Path) -> Path:
    return write_cluster(launcher={"job_root": str(tmp_path / "jobroot")})


def _orch(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180,
                          check=False, preexec_fn=lambda: os.umask(0o022))


def _submit(stubs: Stubs, cwd: Path, cluster: Path, *args: str) -> Path:
    proc = _orch(stubs.env(), cwd, "submit", "--cluster", str(cluster), "--partition", "cpu", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return Path(json.loads(proc.stdout)["job_dir"])


def _run_batch(stubs: Stubs, job_dir: Path, cwd: Path, **env: str) -> dict[str, Any]:
    """sbatch.sh under bash, started in ``cwd`` (not the submit directory), its srun running the task."""
    task = batch_task_env()
    proc = subprocess.run(["bash", str(job_dir / "sbatch.sh")], cwd=cwd, capture_output=True, text=True,
                          timeout=180, check=False, preexec_fn=lambda: os.umask(0o022),
                          env=stubs.env(**task, ORCH_STUB_SRUN_EXEC="1", **env))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [line] = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    result: dict[str, Any] = json.loads(line.removeprefix("RESULT "))
    return result


def _config(job_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((job_dir / "job.json").read_text())
    return data


def test_a_snapshot_job_writes_relative_paths_into_the_submit_directory(proj: Path, cluster: Path, stubs: Stubs,
                                                                        tmp_path: Path) -> None:
    job_dir = _submit(stubs, proj, cluster, "train.py", "--", "--out", "runs/a")
    tree = Path(_config(job_dir)["snapshot"]["path"])
    (proj / "helper.py").write_text("VERSION = 2\n")  # an edit after the submit: the job imports the copy
    got = _run_batch(stubs, job_dir, tmp_path)
    assert got["cwd"] == str(proj)  # the submit directory, recorded in job.json, not the snapshot
    assert _config(job_dir)["script"]["cwd"] == str(proj)
    assert (got["argv0"], got["path0"], got["helper"]) == (str(tree / "train.py"), str(tree), 1)
    assert (proj / "runs" / "a" / "out0.txt").read_text() == "rank 0"
    assert not (tree / "runs").exists()
    # a requeue (restart 1) and a restart use the same recorded directory
    (proj / "runs" / "a" / "out0.txt").unlink()
    assert _run_batch(stubs, job_dir, tmp_path, SLURM_RESTART_COUNT="1")["cwd"] == str(proj)
    assert (proj / "runs" / "a" / "out0.txt").is_file()


def test_the_batch_script_asks_slurm_for_the_submit_directory_and_a_job_file_keeps_its_own(
        proj: Path, cluster: Path, stubs: Stubs, write_job: Callable[..., Path]) -> None:
    job_dir = _submit(stubs, proj, cluster, "train.py")
    [call] = stubs.records("sbatch")
    assert f"--chdir={proj}" in call["sbatch_options"]  # as Slurm's own parser reads the #SBATCH line
    assert f"#SBATCH --chdir={proj}\n" in (job_dir / "sbatch.sh").read_text()
    # a job file (jobs/*.py, a SPEC): no --chdir, it runs in sbatch's directory and writes into its job folder
    job_file = _submit(stubs, proj, cluster, str(write_job(gpus=0)), "--ntasks-per-node", "1")
    assert "--chdir" not in (job_file / "sbatch.sh").read_text()


def test_module_imports_come_from_the_snapshot_and_writes_go_to_the_submit_directory(
        proj: Path, cluster: Path, stubs: Stubs, tmp_path: Path) -> None:
    job_dir = _submit(stubs, proj, cluster, "-m", "pkg.main")
    tree = Path(_config(job_dir)["snapshot"]["path"])
    (proj / "pkg" / "main.py").write_text("raise SystemExit('the live copy ran')\n")
    got = _run_batch(stubs, job_dir, tmp_path)
    assert (got["cwd"], got["path0"], got["mod"]) == (str(proj), str(tree), str(tree / "pkg" / "main.py"))
    assert (proj / "runs" / "a" / "out0.txt").is_file()


def test_a_relative_pythonpath_imports_the_snapshot_copy(proj: Path, cluster: Path, stubs: Stubs,
                                                         tmp_path: Path) -> None:
    (proj / "scripts").mkdir()
    (proj / "scripts" / "train.py").write_text(WRITER)  # `import helper` needs the top folder: PYTHONPATH=.
    (proj / "helper.py").unlink()
    (proj / "lib").mkdir()
    (proj / "lib" / "helper.py").write_text("VERSION = 1\n")
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "first"]):  # the work tree is the snapshot
        subprocess.run([*git, *args], cwd=proj, check=True, capture_output=True)
    job_dir = _submit(stubs, proj, cluster, "scripts/train.py")
    (proj / "lib" / "helper.py").write_text("VERSION = 2\n")
    got = _run_batch(stubs, job_dir, proj, PYTHONPATH=f"lib{os.pathsep}{ROOT}")
    assert (got["cwd"], got["helper"]) == (str(proj), 1)


def test_orch_run_with_two_ranks_writes_into_the_directory_it_was_started_in(proj: Path, tmp_path: Path) -> None:
    env = clean_environ(PYTHONPATH=str(ROOT))
    env.pop("OMP_NUM_THREADS", None)
    proc = _orch(env, proj, "run", "train.py", "--nproc", "2", "--cpu", "--job-root", str(tmp_path / "jobs"))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (proj / "runs" / "a").iterdir()) == ["out0.txt", "out1.txt"]
    [job_dir] = [p for p in (tmp_path / "jobs").iterdir() if (p / "job.json").is_file()]
    assert _config(job_dir)["script"]["cwd"] == str(proj)
    status = _orch(env, tmp_path, "status", str(job_dir))  # from elsewhere: the recorded directory
    assert f"# working directory: {proj} (the submit directory" in status.stdout, status.stdout + status.stderr
    assert json.loads(_orch(env, tmp_path, "status", str(job_dir), "--json").stdout)["workdir"] == str(proj)


def test_the_dry_run_says_where_the_script_works(proj: Path, cluster: Path, stubs: Stubs) -> None:
    args = ("submit", "train.py", "--cluster", str(cluster), "--partition", "cpu", "--dry-run")
    text = _orch(stubs.env(), proj, *args)
    assert text.returncode == 0, text.stderr
    assert f"# working directory of every rank: {proj} (the submit directory, snapshot or not" in text.stdout
    data = json.loads(_orch(stubs.env(), proj, *args, "--json").stdout)
    assert data["runs"]["workdir"] == str(proj)
