"""File-system errors in the verbs: a read-only job folder (``orch plot``, ``orch run --resume`` with an override),
a symlink loop as job root, names over 255 bytes, a deleted working directory: one clear error each.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import (
    CANNED_JOB_ID,
    CANNED_SUBMIT,
    ORCH,
    ROOT,
    clean_environ,
    cluster_for,
    make_job,
    run_cli,
)

from orchestrator.spec.runconfig import RunConfig, run_config_text

JOB_ID = CANNED_JOB_ID
SUBMIT = CANNED_SUBMIT


@pytest.fixture
def slurm(slurm_answers: Path) -> Path:
    """The canned Slurm answers (tests/conftest.py), under the name these tests use."""
    return slurm_answers


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
