"""A job sbatch queued is never left untracked.

A fake ``sbatch`` first on PATH does the unlucky thing while orch waits for it, then prints the id:

* the disk (a small tmpfs holding the job root) fills up: its blocks, its inodes, or both; the id is
  still recorded (``job_id`` was reserved before sbatch and is rewritten in place), exit 0;
* the job folder disappears: orch cancels the job it just queued (fake ``scancel`` records it) and exits
  1 saying so; when scancel fails too, the error names the id and the scancel command;
* SIGINT, SIGTERM or SIGHUP reach ``orch submit`` (and ``--sweep``): held back until the id is recorded;
* SIGKILL: the id stays unrecorded; when Slurm holds no job of the folder's token, ``orch status FOLDER``
  says UNKNOWN and why (no traceback), and the batch script, run as Slurm would start it, records its own
  id (finding the job by its token: test_slurm_tracking_reconcile.py).

A disk full before anything was queued leaves no job and no folder (exit 2, sbatch never called).
The real-Slurm counterpart is tests/e2e/test_e2e_tracked.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support import ORCH, STUBS_DIR, clean_environ

NEEDS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")

FAKE_SBATCH = r"""#!/bin/bash
script="${@: -1}"
dir=$(dirname -- "$script")
printf 'sbatch %s\n' "$*" >>"$FAKE_LOG"
case "${FAKE_MODE:-}" in
    blocks) dd if=/dev/zero of="$FAKE_FILL/fill" bs=4096 2>/dev/null || true ;;
    inodes) i=0; while : >"$FAKE_FILL/i$i" 2>/dev/null; do i=$((i + 1)); done ;;
    both) dd if=/dev/zero of="$FAKE_FILL/fill" bs=4096 2>/dev/null
          i=0; while : >"$FAKE_FILL/i$i" 2>/dev/null; do i=$((i + 1)); done ;;
    vanish) rm -rf -- "$dir" ;;
    signal) kill -s "$FAKE_SIGNAL" "$PPID"; sleep 0.3 ;;
esac
echo "${FAKE_ID:-4242}"
"""
FAKE_SCANCEL = r"""#!/bin/bash
printf 'scancel %s\n' "$*" >>"$FAKE_LOG"
exit "${FAKE_SCANCEL_RC:-0}"
"""


@pytest.fixture
def fakes(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    for name, text in (("sbatch", FAKE_SBATCH), ("scancel", FAKE_SCANCEL)):
        (folder / name).write_text(text, encoding="utf-8")
        (folder / name).chmod(0o755)
    return folder


def _default_signals() -> None:
    """orch as started from a terminal: a runner under nohup or `&` hands its children SIGHUP/SIGINT
    ignored, and an ignored signal is rightly never acted on (seen in CI)."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def submit(fakes: Path, cluster: Path, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, "submit", "smoke", "--cluster", str(cluster), *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120, check=False, preexec_fn=_default_signals,
                          env=clean_environ(PATH=f"{fakes}{os.pathsep}{os.environ['PATH']}",
                                            FAKE_LOG=str(cwd / "calls.log"), **env))


def calls(cwd: Path) -> list[str]:
    log = cwd / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def the_folder(root: Path) -> Path:
    [folder] = [p for p in root.iterdir() if p.is_dir()]
    return folder


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir(mode=0o700)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,nr_inodes=200,mode=0700", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@NEEDS_ROOT
@pytest.mark.parametrize("mode", ["blocks", "inodes", "both"])
def test_disk_full_while_sbatch_runs_still_records_the_id(mode: str, small_disk: Path, fakes: Path,
                                                          write_cluster: Callable[..., Path], tmp_path: Path) -> None:
    cluster = write_cluster(launcher={"job_root": str(small_disk / "jobs")})
    (small_disk / "fill").mkdir()
    proc = submit(fakes, cluster, tmp_path, FAKE_MODE=mode, FAKE_FILL=str(small_disk / "fill"), FAKE_ID="4343")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "submitted job 4343" in proc.stdout
    folder = the_folder(small_disk / "jobs")
    assert (folder / "job_id").read_text(encoding="ascii") == "4343\n"


@NEEDS_ROOT
def test_disk_full_before_sbatch_queues_nothing(small_disk: Path, fakes: Path, write_cluster: Callable[..., Path],
                                                tmp_path: Path) -> None:
    cluster = write_cluster(launcher={"job_root": str(small_disk / "jobs")})
    subprocess.run(["dd", "if=/dev/zero", f"of={small_disk / 'fill'}", "bs=4096"], capture_output=True, check=False)
    proc = submit(fakes, cluster, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "orch: error:" in proc.stderr and "Traceback" not in proc.stderr
    assert calls(tmp_path) == [], "sbatch ran although the job folder could not be written"
    assert not (small_disk / "jobs").exists() or not any((small_disk / "jobs").iterdir())


@pytest.mark.parametrize(("scancel_rc", "says"), [("0", "was cancelled"), ("1", "scancel 4242")])
def test_unrecordable_id_cancels_the_job(scancel_rc: str, says: str, fakes: Path,
                                         write_cluster: Callable[..., Path], tmp_path: Path) -> None:
    cluster = write_cluster()
    proc = submit(fakes, cluster, tmp_path, FAKE_MODE="vanish", FAKE_SCANCEL_RC=scancel_rc)
    assert proc.returncode == 1, proc.stderr
    assert "orch: error: sbatch queued job 4242" in proc.stderr and says in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert calls(tmp_path)[-1] == "scancel 4242"


@pytest.mark.parametrize("sig", ["INT", "TERM", "HUP"])
@pytest.mark.parametrize("sweep", [False, True], ids=["job", "sweep"])
def test_signal_during_sbatch_waits_for_the_id(sig: str, sweep: bool, fakes: Path,
                                               write_cluster: Callable[..., Path], tmp_path: Path) -> None:
    cluster = write_cluster()
    args = ("--sweep", "lr=0.1,0.2") if sweep else ()
    proc = submit(fakes, cluster, tmp_path, *args, FAKE_MODE="signal", FAKE_SIGNAL=sig)
    assert proc.returncode != 0, "the signal was lost"
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "id recorded" in proc.stderr, proc.stderr
    folder = the_folder(tmp_path / "jobs")
    assert (folder / "job_id").read_text(encoding="ascii") == "4242\n"
    if sweep:
        for index in (0, 1):
            assert (folder / str(index) / "job_id").read_text(encoding="ascii") == f"4242_{index}\n"
            assert json.loads((folder / str(index) / "submitted.json").read_text())["job_id"] == f"4242_{index}"
    else:
        assert json.loads((folder / "submitted.json").read_text())["job_id"] == "4242"


def test_sigkilled_submit_leaves_a_job_that_records_its_own_id(fakes: Path, write_cluster: Callable[..., Path],
                                                                tmp_path: Path) -> None:
    cluster = write_cluster()
    proc = submit(fakes, cluster, tmp_path, FAKE_MODE="signal", FAKE_SIGNAL="KILL")
    assert proc.returncode == -signal.SIGKILL
    folder = the_folder(tmp_path / "jobs")
    assert (folder / "job_id").read_text(encoding="ascii").strip() == ""  # reserved, never filled
    # Slurm holds no job of the folder's token (the stub squeue's queue is empty): UNKNOWN, and why
    status = subprocess.run([ORCH, "status", str(folder)], capture_output=True, text=True, timeout=120,
                            check=False, env=clean_environ(
                                PATH=f"{STUBS_DIR / 'queue'}{os.pathsep}{STUBS_DIR}{os.pathsep}{os.environ['PATH']}",
                                ORCH_STUB_PYTHON=sys.executable))
    assert "Traceback" not in status.stderr and "orch submit was stopped" in status.stdout, status
    # Slurm starts the job: the batch script records its own id before anything else can fail
    run = subprocess.run(["bash", str(folder / "sbatch.sh")], capture_output=True, text=True, timeout=120,
                         check=False, cwd=tmp_path,
                         env=clean_environ(PATH=f"{STUBS_DIR}{os.pathsep}{os.environ['PATH']}",
                                           ORCH_STUB_PYTHON=sys.executable, SLURM_JOB_ID="4242",
                                           SLURM_JOB_NODELIST="gpu001", SLURM_JOB_NUM_NODES="1"))
    assert (folder / "job_id").read_text(encoding="ascii") == "4242\n", run.stderr
    assert not list(folder.glob(".job_id*"))


def test_batch_script_of_an_array_element_records_both_ids(fakes: Path, write_cluster: Callable[..., Path],
                                                           tmp_path: Path) -> None:
    cluster = write_cluster()
    proc = submit(fakes, cluster, tmp_path, "--sweep", "lr=0.1,0.2", FAKE_MODE="signal", FAKE_SIGNAL="KILL")
    assert proc.returncode == -signal.SIGKILL
    folder = the_folder(tmp_path / "jobs")
    run = subprocess.run(["bash", str(folder / "sbatch.sh")], capture_output=True, text=True, timeout=120,
                         check=False, cwd=tmp_path,
                         env=clean_environ(PATH=f"{STUBS_DIR}{os.pathsep}{os.environ['PATH']}",
                                           ORCH_STUB_PYTHON=sys.executable, SLURM_JOB_ID="4244",
                                           SLURM_ARRAY_JOB_ID="4242", SLURM_ARRAY_TASK_ID="1",
                                           SLURM_JOB_NODELIST="gpu001", SLURM_JOB_NUM_NODES="1"))
    assert (folder / "1" / "job_id").read_text(encoding="ascii") == "4242_1\n", run.stderr
    assert (folder / "job_id").read_text(encoding="ascii") == "4242\n"
    assert (folder / "1" / "slurm_job_id").read_text(encoding="ascii") == "4244\n"
