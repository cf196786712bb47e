"""Runs made once per test session, however many pytest-xdist workers run the tests that read them.

A run whose outcome several tests only read (a reference run's parameters, a failed run's summary and logs)
costs its ranks' start-up each time it is made: some 5 CPU-seconds a rank here. A module-scoped fixture makes it
once per module *and per worker* (``--dist worksteal`` hands a module's tests to both workers), and two modules
that need the same run make it twice. ``once`` makes it once per session: the first worker to ask makes it in a
folder both workers share (the workers' base folders have one parent), the others wait on a lock and read what it
returned. The folder is the run's: a test that changes what is in it (a resume writes its checkpoints there)
copies it first (``copy_job``).

``make`` must return something picklable (a ``CompletedProcess``, a dict, a dataclass of those). A run whose
making raised is not kept: the next test to ask makes it again, and fails with its own message.
"""

from __future__ import annotations

import fcntl
import json
import os
import pickle
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


def shared_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every worker of this session shares (the parent of the workers' base folders under xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], T]) -> T:
    """``make(folder)``'s result, made once per session under the name ``name`` (a word: letters, digits, ``-_.``),
    in a new empty ``folder`` of its own."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise ValueError(f"a shared run's name is a word, not {name!r}")
    root = shared_folder(tmp_path_factory) / "shared-runs"
    root.mkdir(exist_ok=True)
    folder = root / name
    done = root / f"{name}.pickle"
    with open(root / f"{name}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker making it now: wait for it
        if done.exists():
            made: T = pickle.loads(done.read_bytes())
            return made
        if folder.exists():  # an earlier attempt that raised
            shutil.rmtree(folder)
        folder.mkdir()
        made = make(folder)
        partial = done.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(made))
        partial.replace(done)
        return made


def copy_job(job_dir: Path, into: Path) -> Path:
    """A copy of the finished job folder ``job_dir`` under ``into`` (made with mode 0o750 when missing), with
    ``job.json`` naming its new place, for a test that resumes or otherwise changes it."""
    into.mkdir(mode=0o750, parents=True, exist_ok=True)
    folder = into / job_dir.name
    shutil.copytree(job_dir, folder, symlinks=True)
    job_file = folder / "job.json"
    cfg = json.loads(job_file.read_text(encoding="utf-8"))
    cfg["job_dir"] = str(folder)
    job_file.write_text(json.dumps(cfg), encoding="utf-8")
    os.chmod(job_file, 0o640)
    return folder
