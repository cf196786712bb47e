"""Trust of job folders: the pure rules (mode and owner of each folder and file), and ``orch run --resume``,
the task's entry and the job root's creation applying them. Folders come from one real ``orch run smoke``
(copied per test); refusals go through the real CLI and exit 2 with ``orch: error:``, a HINT, no traceback,
and start no rank.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml
from support import TEST_CLUSTER, assert_refused, clean_environ, no_rank_started, resume

from orchestrator.cli import main
from orchestrator.records.trust import TrustError, check_folder, problem

if TYPE_CHECKING:
    from support import Stubs

OTHER_UID = 54321  # a user that is not us (the tests chown to it; they need root)

NEEDS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")


# --- trust of job folders: pure rules ---------------------------------------------------------------

def _stat(mode: int, uid: int) -> os.stat_result:
    return os.stat_result((mode, 0, 0, 1, uid, 0, 0, 0, 0, 0))


@pytest.mark.parametrize(("mode", "uid", "is_dir", "trusted"), [
    (stat.S_IFDIR | 0o750, 1000, True, True),
    (stat.S_IFDIR | 0o700, 0, True, True),  # root's
    (stat.S_IFDIR | 0o770, 1000, True, False),
    (stat.S_IFDIR | 0o757, 1000, True, False),
    (stat.S_IFDIR | 0o1777, 1000, True, True),  # sticky: nobody renames what others own
    (stat.S_IFDIR | 0o750, 1001, True, False),
    (stat.S_IFREG | 0o640, 1000, False, True),
    (stat.S_IFREG | 0o660, 1000, False, False),
    (stat.S_IFREG | 0o646, 1000, False, False),
    (stat.S_IFREG | 0o1666, 1000, False, False),  # a sticky bit does not protect a file's content
    (stat.S_IFREG | 0o600, 1001, False, False),
    (stat.S_IFDIR | 0o750, 1000, False, False),  # a folder where a file should be
    (stat.S_IFREG | 0o750, 1000, True, False),  # a file where a folder should be
])
def test_trust_rules(mode: int, uid: int, is_dir: bool, trusted: bool) -> None:
    assert (problem(_stat(mode, uid), 1000, is_dir=is_dir) is None) == trusted


@NEEDS_ROOT
@pytest.mark.parametrize("tamper", [
    "folder o+w", "folder g+w", "folder owner", "job.json owner", "job.json o+w", "job.json g+w",
    "job.json symlink", "checkpoint owner", "checkpoint o+w", "checkpoints o+w", "job root o+w",
    "job root owner", "previous.pt symlink",
])
def test_resume_refuses_folders_others_could_write(tamper: str, job_copy: Path) -> None:
    target = {"folder": job_copy, "job.json": job_copy / "job.json", "checkpoint": job_copy / "checkpoints" /
              "latest.pt", "checkpoints": job_copy / "checkpoints", "job root": job_copy.parent,
              "previous.pt": job_copy / "checkpoints" / "previous.pt"}[tamper.rsplit(" ", 1)[0]]
    what = tamper.rsplit(" ", 1)[1]
    if what == "o+w":
        os.chmod(target, stat.S_IMODE(target.stat().st_mode) | 0o002)
    elif what == "g+w":
        os.chmod(target, stat.S_IMODE(target.stat().st_mode) | 0o020)
    elif what == "owner":
        os.chown(target, OTHER_UID, -1)
    elif what == "symlink":
        name = "previous.pt" if tamper.startswith("previous") else target.name
        link = job_copy / ("checkpoints" if name.endswith(".pt") else "") / name
        link.unlink(missing_ok=True)
        link.symlink_to(job_copy / "checkpoints" / "latest.pt" if name.endswith(".pt") else "/tmp/elsewhere.json")
    before = time.time()
    proc = resume(job_copy)
    if tamper == "job root owner":  # the job root is a folder above the job folder: owner is not checked
        assert proc.returncode == 0, proc.stderr
        return
    assert_refused(proc)
    assert "another user could have changed" in proc.stderr or "symbolic link" in proc.stderr
    assert no_rank_started(job_copy, before)


@NEEDS_ROOT
def test_the_task_entry_checks_the_folder_too(job_copy: Path) -> None:
    """A Slurm task reads job.json itself: a tampered folder stops it before anything is imported."""
    os.chown(job_copy / "job.json", OTHER_UID, -1)
    env = clean_environ(PYTHONPATH=os.environ.get("PYTHONPATH", ""), RANK="0", LOCAL_RANK="0", WORLD_SIZE="1",
                        LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29999")
    proc = subprocess.run([sys.executable, "-m", "orchestrator.runtime.launch", "--job-dir", str(job_copy)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "another user could have changed" in proc.stderr and "Traceback" not in proc.stderr
    assert "torch" not in proc.stderr.lower() or "uid" in proc.stderr


def test_sticky_world_writable_job_root_is_fine_but_not_without_sticky(tmp_path: Path) -> None:
    root = tmp_path / "shared"
    root.mkdir()
    os.chmod(root, 0o1777)
    check_folder(root / "jobs", "the job root")
    os.chmod(root, 0o777)
    with pytest.raises(TrustError, match="without the sticky bit"):
        check_folder(root / "jobs", "the job root")


def test_run_and_submit_create_the_job_root_with_one_mode(tmp_path: Path, stubs: Stubs) -> None:
    cluster = tmp_path / "cluster.yaml"
    data = {**TEST_CLUSTER, "launcher": {**TEST_CLUSTER["launcher"], "job_root": str(tmp_path / "sub" / "root")}}
    cluster.write_text(yaml.safe_dump(data), encoding="utf-8")
    old = os.umask(0)
    try:
        assert main(["submit", "smoke", "--cluster", str(cluster)]) == 0
        from orchestrator.records.jobcreate import create_job_dir

        create_job_dir(tmp_path / "local" / "root" / "smoke-1")  # what orch run and the API's local mode use
    finally:
        os.umask(old)
    modes = {stat.S_IMODE((tmp_path / where / "root").stat().st_mode) for where in ("sub", "local")}
    assert modes == {0o700}  # 0700 whatever the umask (a job folder holds secrets)
