"""File-system errors in the verbs: a read-only job folder (``orch plot``, ``orch run --resume`` with an override),
a symlink loop as job root, names over 255 bytes, a deleted working directory: one clear error each.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, ROOT, clean_environ

from orchestrator.cli import main
from orchestrator.spec.runconfig import RunConfig, run_config_text

JOB_ID = "4242"

SUBMIT = "2026-11-25T10:00:00"

HANG = 20  # seconds: anything slower is a hang


@contextlib.contextmanager
def no_hang(seconds: int = HANG) -> Iterator[None]:
    def fire(signum: int, frame: object) -> None:
        raise TimeoutError(f"hung for {seconds} s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with no_hang():
        code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    assert code in (0, 1, 2), (code, err)
    return code, out, err


@pytest.fixture
def slurm(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Stand-in squeue/sacct/scontrol/scancel printing ``<dir>/<name>.out``; returns that folder."""
    answers = tmp_path / "answers"
    answers.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("squeue", "sacct", "scontrol", "scancel"):
        exe = bin_dir / name
        exe.write_text(f"#!/bin/sh\ncat {answers / name}.out 2>/dev/null\nexit 0\n")
        exe.chmod(0o755)
    clean_env.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    (answers / "sacct.out").write_text(
        f"{JOB_ID}|COMPLETED|0:0|node1|00:00:10|10|billing=1,cpu=1,node=1|{SUBMIT}|smoke\n")
    return answers


def make_job(root: Path, name: str = "smoke-20261125-100000-abc123") -> Path:
    folder = root / name
    (folder / "logs").mkdir(parents=True)
    (folder / "checkpoints").mkdir()
    folder.chmod(0o750)
    config = RunConfig(mode="slurm", job_name="smoke", job_file="/jobs/smoke.py", params={"epochs": 2}, nodes=1,
                       gpus_per_node=0, tasks_per_node=1, cpus_per_task=1, job_dir=str(folder),
                       created="2026-11-25T10:00:00+00:00")
    (folder / "job.json").write_text(run_config_text(config))
    (folder / "job_id").write_text(JOB_ID + "\n")
    (folder / "logs" / f"slurm-{JOB_ID}.out").write_text(f"orch: job {JOB_ID} (restart 0) on node1: hi\n")
    (folder / "logs" / f"{JOB_ID}-rank0.out").write_text("epoch 1 loss 0.5\n")
    (folder / "metrics.jsonl").write_text(json.dumps({"epoch": 1, "train_loss": 0.5, "test_loss": 0.4}) + "\n")
    return folder


def cluster_for(tmp_path: Path, root: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text("name: t\npartitions:\n  - {name: debug, nodes: 'node[1-2]', gpus_per_node: 0, cpus_per_node: 4, "
                    f"mem_per_node: 4096}}\nlauncher:\n  job_root: {root}\n")
    return path


# -- file-system errors -------------------------------------------------------------------------

@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A read-only file system (a tmpfs remounted ro); skipped where this test may not mount."""
    mount = tmp_path / "ro"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_plot_of_a_read_only_job_folder_is_a_clear_error(read_only: Path, slurm: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_job(read_only / "jobs")
    subprocess.run(["mount", "-o", "remount,ro", str(read_only)], check=True)
    code, _, err = run_cli(["plot", str(folder)], capsys)
    assert code == 2 and "cannot write the plot" in err and "-o PNG" in err
    code, _, err = run_cli(["plot", str(folder), "-o", str(tmp_path / "ok.png")], capsys)
    assert code == 0 and (tmp_path / "ok.png").exists()


def test_resume_with_an_override_in_a_read_only_folder(read_only: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str], clean_env: Any) -> None:
    folder = read_only / "run"
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "logs").mkdir()
    config = RunConfig(mode="local", job_name="smoke", job_file=str(ROOT / "jobs" / "smoke.py"),
                       params={}, nodes=1, gpus_per_node=0, tasks_per_node=1, cpus_per_task=1, job_dir=str(folder),
                       created="2026-11-25T10:00:00+00:00")
    (folder / "job.json").write_text(run_config_text(config))
    for path in (read_only, folder, folder / "checkpoints", folder / "logs"):
        path.chmod(0o700)
    subprocess.run(["mount", "-o", "remount,ro", str(read_only)], check=True)
    code, _, err = run_cli(["run", "--resume", str(folder), "epochs=3"], capsys)
    assert code == 2 and err.count("orch: error:") == 1 and "read-only" in err.lower(), err


@pytest.mark.parametrize("how", ["loop", "long name", "long path"])
def test_a_job_root_orch_cannot_use_is_a_clear_error(how: str, tmp_path: Path, clean_env: Any,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    if how == "loop":
        root = tmp_path / "loop"
        root.symlink_to(root)
    elif how == "long name":
        root = tmp_path / ("n" * 300)
    else:
        root = tmp_path.joinpath(*(["d" * 200] * 25))
    cluster = cluster_for(tmp_path, root)
    for argv in (["list", "--cluster", str(cluster)], ["status", "--cluster", str(cluster)],
                 ["run", "smoke", "--cluster", str(cluster)], ["status", "123", "--cluster", str(cluster)]):
        code, _, err = run_cli(argv, capsys)
        if argv[0] == "run":
            assert code == 2 and err.count("orch: error:") == 1, err


@pytest.mark.parametrize("argv", [["list"], ["status"], ["submit", "smoke", "--dry-run"], ["run", "smoke"],
                                  ["doctor", "x.py"], ["logs", "1"]])
def test_a_deleted_working_directory_is_named(argv: list[str], tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    proc = subprocess.Popen([ORCH, *argv], cwd=gone, env=clean_environ(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=lambda: os.rmdir(gone))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "current folder no longer exists" in err and "Traceback" not in err, err
