"""One run of an ``orch run`` command that several runnable docs blocks show, in the same state.

The same command appears on two pages (``orch run smoke --nproc 2`` in README.md and docs/cli.md; the ddp_train
run in README.md and docs/bring-your-own-script.md). Each block runs in a fresh clone of its own; an ``orch run``
whose clone and home are still as the clone left them (the block's earlier commands changed nothing there: dry
runs, ``orch doctor``; what they put in orch's caches under ``$XDG_CACHE_HOME`` is no state, the caches being
content-keyed: tests/records/test_cache_content_key.py) runs in a fresh clone exactly as it would run in the
block's. So it runs once per session (``sharedruns.once``), with the same environment, and every such block is
judged on that run: its exit code and output. The block then goes on in the state the run left: what the run added
or changed in the shared clone (``git status``, ignored files included) and its home are copied into the block's
own, so the block's later commands (``orch list``, dry runs of the script) read what they would have read.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import sharedruns

Workdir = Callable[[Path], tuple[Path, dict[str, str]]]  # a fresh clone in FOLDER/orch and its environment


def shareable(argv: tuple[str, ...]) -> bool:
    """An ``orch run`` of a job or script (a resume reads a folder of its block's own)."""
    return argv[:1] == ("run",) and "--resume" not in argv


def state(work: Path, home: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What differs in the clone from its commit (bytecode caches aside) and what the home folder holds."""
    out = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all", "-z"], cwd=work,
                         capture_output=True, check=True, env={"HOME": str(home), "PATH": "/usr/bin:/bin",
                                                               "GIT_CONFIG_NOSYSTEM": "1"}).stdout.decode()
    entries = tuple(e for e in out.split("\0") if e and "__pycache__/" not in e)
    cache = home / ".cache"  # XDG_CACHE_HOME: orch's caches are content-keyed (the same answers with or without)
    return entries, tuple(sorted(str(p.relative_to(home)) for p in home.rglob("*") if not p.is_relative_to(cache)))


def _copy(source: Path, target: Path) -> None:
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.exists() or target.is_symlink():
        target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir() and not source.is_symlink():
        shutil.copytree(source, target, symlinks=True)
    else:
        shutil.copy2(source, target, follow_symlinks=False)


def shared_run(tmp_path_factory: pytest.TempPathFactory, workdir: Workdir, argv: list[str],
               timeout: float) -> dict[str, object]:
    """``argv`` run once per session in a fresh clone: exit code, output, seconds, and where its clone and home are."""
    name = "docs-" + hashlib.sha256("\0".join(argv).encode()).hexdigest()[:16]

    def make(folder: Path) -> dict[str, object]:
        work, env = workdir(folder)
        started = time.monotonic()
        try:
            proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=timeout,
                                  check=False)
        except subprocess.TimeoutExpired:
            return {"timed_out": True, "took": time.monotonic() - started}
        return {"timed_out": False, "returncode": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr,
                "took": time.monotonic() - started, "work": str(work), "home": str(folder / "home")}

    return sharedruns.once(tmp_path_factory, name, make)


def take_over(made: dict[str, object], work: Path, home: Path) -> None:
    """Bring the block's clone and home to the state the shared run left (theirs were as fresh as the block's)."""
    their_work, their_home = Path(str(made["work"])), Path(str(made["home"]))
    for entry in state(their_work, their_home)[0]:
        path = entry[3:].rstrip("/")
        if (their_work / path).exists() or (their_work / path).is_symlink():
            _copy(their_work / path, work / path)
        elif (work / path).exists():  # the run deleted it
            _copy_gone(work / path)
    shutil.copytree(their_home, home, symlinks=True, dirs_exist_ok=True)


def _copy_gone(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
