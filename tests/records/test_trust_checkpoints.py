"""Checkpoints through a symlink into a folder others can write are never resumed from: the trust
rules (orchestrator/records/trust.py) apply to every path a resume reads: the checkpoint folder and
where a link leads it, every folder on the way, the links themselves, the checkpoint files and their
sidecars, in ``orch run --resume`` (real CLI, one finished smoke run copied per test), in the task's
entry (a requeue), and in rank 0 right before it loads (the file swapped after the start checks).
Refusals exit 2 with ``orch: error:`` naming the path, a HINT, no traceback, and start no rank."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from support import ORCH, clean_environ

from orchestrator.env.devices import CPU
from orchestrator.local.rankenv import free_port
from orchestrator.records.trust import TrustError, check_checkpoint
from orchestrator.runtime.checkpoint import LATEST, Checkpointer, CheckpointError, write_atomic
from orchestrator.runtime.dist import Dist, process_group

OTHER_UID = 43210  # a user that is not us (chown needs root: the tests run as root here)
NEEDS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")


def orch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, *args], capture_output=True, text=True, cwd=cwd, timeout=300, check=False,
                          env=clean_environ(PYTHONPATH=os.environ.get("PYTHONPATH", "")))


def resume(folder: Path) -> subprocess.CompletedProcess[str]:
    return orch("run", "--resume", str(folder), "epochs=2", cwd=folder.parent)


def rank_log_mtime(folder: Path) -> float:
    log = folder / "logs" / "local-rank0.out"
    return log.stat().st_mtime if log.exists() else 0.0


def assert_refused(folder: Path, *names: str, ran: Path | None = None) -> str:
    before = rank_log_mtime(folder)
    time.sleep(0.01)
    proc = resume(ran or folder)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "orch: error:" in proc.stderr and "HINT:" in proc.stderr and "Traceback" not in proc.stderr
    for name in names:
        assert name in proc.stderr, f"{name!r} not in {proc.stderr!r}"
    assert rank_log_mtime(folder) == before, "a rank started"
    return proc.stderr


def move_checkpoints_to(job: Path, target: Path) -> Path:
    """Move the job's checkpoints/ to ``target`` and leave a symlink in its place."""
    shutil.move(str(job / "checkpoints"), str(target))
    (job / "checkpoints").symlink_to(target)
    return target


def shared(tmp_path: Path, name: str, mode: int, owner: int | None = None) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    os.chmod(folder, mode)
    if owner is not None:
        os.chown(folder, owner, -1)
    return folder


# --- the normal cases still resume ------------------------------------------------------------------

def test_plain_resume_and_checkpoints_linked_into_a_folder_of_yours_resume(job_copy: Path, tmp_path: Path) -> None:
    proc = resume(job_copy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    scratch = shared(tmp_path, "my-scratch", 0o700)
    move_checkpoints_to(job_copy, scratch / "ckpt")
    proc = resume(job_copy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (scratch / "ckpt" / "latest.pt").is_file()


def test_a_sticky_shared_scratch_of_your_own_subfolder_resumes(job_copy: Path, tmp_path: Path) -> None:
    scratch = shared(tmp_path, "scratch", 0o1777)  # like /tmp: others can add, never rename yours
    target = scratch / "me"
    target.mkdir(mode=0o700)
    move_checkpoints_to(job_copy, target / "ckpt")
    proc = resume(job_copy)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- refused: through links into folders others can change -------------------------------------------

@pytest.mark.parametrize("mode", [0o777, 0o773, 0o707])
def test_checkpoints_linked_into_a_world_writable_folder_are_refused(job_copy: Path, tmp_path: Path,
                                                                      mode: int) -> None:
    ww = shared(tmp_path, "world", mode)
    move_checkpoints_to(job_copy, ww / "ckpt")
    assert_refused(job_copy, str(ww), "checkpoint folder", "writable by others")


def test_a_deeper_world_writable_folder_on_the_link_target_is_refused(job_copy: Path, tmp_path: Path) -> None:
    ww = shared(tmp_path, "pool", 0o777)
    deep = ww / "a" / "b"
    deep.mkdir(parents=True, mode=0o700)
    move_checkpoints_to(job_copy, deep / "ckpt")
    assert_refused(job_copy, str(ww))


def test_a_link_to_a_link_into_a_world_writable_folder_is_refused(job_copy: Path, tmp_path: Path) -> None:
    ww = shared(tmp_path, "open", 0o777)
    mine = shared(tmp_path, "mine", 0o700)
    move_checkpoints_to(job_copy, ww / "ckpt")
    (job_copy / "checkpoints").unlink()
    (mine / "hop").symlink_to(ww / "ckpt")
    (job_copy / "checkpoints").symlink_to(mine / "hop")
    assert_refused(job_copy, str(ww))


def test_the_job_folder_reached_through_a_world_writable_folder_is_refused(job_copy: Path, tmp_path: Path) -> None:
    ww = shared(tmp_path, "drop", 0o777)
    (ww / "job").symlink_to(job_copy)
    assert_refused(job_copy, str(ww), ran=ww / "job")


@NEEDS_ROOT
def test_checkpoints_linked_into_a_folder_another_user_owns_are_refused(job_copy: Path, tmp_path: Path) -> None:
    theirs = shared(tmp_path, "theirs", 0o755, owner=OTHER_UID)
    move_checkpoints_to(job_copy, theirs / "ckpt")
    assert_refused(job_copy, str(theirs), f"uid {OTHER_UID}")


@NEEDS_ROOT
@pytest.mark.parametrize("where", ["checkpoints", "job"])
def test_a_symlink_owned_by_another_user_is_refused(job_copy: Path, tmp_path: Path, where: str) -> None:
    if where == "checkpoints":
        mine = shared(tmp_path, "mine", 0o700)
        move_checkpoints_to(job_copy, mine / "ckpt")
        link = job_copy / "checkpoints"
        ran = job_copy
    else:  # in a sticky folder: they cannot touch our files, but they own the link and can repoint it
        sticky = shared(tmp_path, "tmpish", 0o1777)
        link = sticky / "job"
        link.symlink_to(job_copy)
        ran = link
    os.lchown(link, OTHER_UID, -1)
    assert_refused(job_copy, str(link), "symbolic link", f"uid {OTHER_UID}", ran=ran)


@NEEDS_ROOT
@pytest.mark.parametrize("name", ["latest.pt", "latest.pt.json", "previous.pt.json"])
def test_a_checkpoint_or_sidecar_owned_by_another_user_is_refused(job_copy: Path, name: str) -> None:
    path = job_copy / "checkpoints" / name
    if not path.exists():
        shutil.copy2(job_copy / "checkpoints" / "latest.pt.json", path)
    os.chown(path, OTHER_UID, -1)
    assert_refused(job_copy, str(path), f"uid {OTHER_UID}")


@NEEDS_ROOT
def test_the_task_entry_refuses_a_linked_checkpoint_folder_too(job_copy: Path, tmp_path: Path) -> None:
    """A requeued Slurm task reads the folder itself: the same rules stop it before torch loads anything."""
    ww = shared(tmp_path, "requeue", 0o777)
    move_checkpoints_to(job_copy, ww / "ckpt")
    env = clean_environ(PYTHONPATH=os.environ.get("PYTHONPATH", ""), RANK="0", LOCAL_RANK="0", WORLD_SIZE="1",
                        LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29998")
    for extra in ([], ["--master-port"]):  # the task, and the batch script's check before srun
        proc = subprocess.run([sys.executable, "-m", "orchestrator.runtime.launch", "--job-dir", str(job_copy),
                               *extra], capture_output=True, text=True, env=env, timeout=120, check=False)
        assert proc.returncode == 2, proc.stderr
        assert str(ww) in proc.stderr and "Traceback" not in proc.stderr


# --- rank 0 checks again right before it loads ------------------------------------------------------------

def _state(epoch: int) -> dict[str, Any]:
    return {"format": 1, "model": {"w": torch.from_numpy(np.full(8, epoch, dtype=np.float32))}, "optimizer": {},
            "epoch": epoch, "step": 0, "world_size": 1, "batch_size": 1, "ranks": []}


@pytest.fixture
def single_rank() -> Iterator[Dist]:
    with process_group(rank=0, world_size=1, local_rank=0, master_addr="127.0.0.1", master_port=free_port(),
                       choice=CPU, timeout=30, collective_timeout=30) as ctx:
        yield ctx


def test_rank_zero_refuses_a_checkpoint_folder_swapped_for_a_link_after_the_start_checks(
        tmp_path: Path, single_rank: Dist) -> None:
    job = shared(tmp_path, "job", 0o700)
    write_atomic(_state(1), job / "checkpoints")
    assert Checkpointer(job / "checkpoints", single_rank).resume() is not None  # trusted: loads
    ww = shared(tmp_path, "ww", 0o777)
    move_checkpoints_to(job, ww / "ckpt")
    with pytest.raises(CheckpointError) as info:
        Checkpointer(job / "checkpoints", single_rank).resume()
    assert str(ww) in info.value.message and "fix:" in info.value.message


@pytest.mark.parametrize("mode", [0o666, 0o646, 0o660])
def test_check_checkpoint_refuses_files_others_can_write(tmp_path: Path, mode: int) -> None:
    job = shared(tmp_path, "job", 0o700)
    write_atomic(_state(2), job / "checkpoints")
    latest = job / "checkpoints" / LATEST
    check_checkpoint(latest)
    os.chmod(latest, mode)
    with pytest.raises(TrustError, match="writable by"):
        check_checkpoint(latest)
    os.chmod(latest, 0o600)
    (job / "checkpoints" / "latest.pt.json").symlink_to(latest)
    with pytest.raises(TrustError, match="symbolic link"):
        check_checkpoint(latest)
