"""The files of a code tree: what a submit from elsewhere ships (and what a snapshot copies).

The rule: the git work tree the target lives in, its tracked files plus the untracked
files git does not ignore (``git ls-files -co --exclude-standard``); a target in no repository:
its folder, without hidden folders, ``__pycache__`` and virtual environments.

The code snapshots (:mod:`orchestrator.records.snapshots.collect`) apply the same rule with their own walk
(a size limit, data folders linked instead of copied): keep the two rules in step; :func:`code_tree` is
the one function to replace should they share one implementation.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

SKIP_DIRS = frozenset({"__pycache__", ".venv", "venv", "node_modules"})


@dataclass(frozen=True)
class CodeTree:
    root: Path  # absolute
    files: tuple[str, ...]  # relative to root, POSIX, sorted; regular files and links only
    git: bool


def code_tree(target: Path) -> CodeTree:
    """The tree ``target`` (a file or a folder) belongs to, and its files."""
    folder = (target if target.is_dir() else target.parent).resolve()
    top = _git_top(folder)
    if top is not None:
        listed = _git_files(top)
        if listed is not None:
            files = [f for f in listed if (top / f).is_file() or (top / f).is_symlink()]
            return CodeTree(top, tuple(sorted(set(files))), True)
    return CodeTree(folder, tuple(sorted(_walk(folder))), False)


def _git_top(folder: Path) -> Path | None:
    try:
        proc = subprocess.run(["git", "-C", str(folder), "rev-parse", "--show-toplevel"], capture_output=True,
                              text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(proc.stdout.strip()).resolve() if proc.returncode == 0 and proc.stdout.strip() else None


def _git_files(top: Path) -> list[str] | None:
    try:
        proc = subprocess.run(["git", "-C", str(top), "ls-files", "-co", "--exclude-standard", "-z"],
                              capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return [name for name in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if name]


def _walk(folder: Path) -> list[str]:
    found: list[str] = []
    for here, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS]
        rel = os.path.relpath(here, folder)
        for name in names:
            path = os.path.join(here, name)
            if os.path.isfile(path) or os.path.islink(path):
                found.append(name if rel == "." else f"{rel}/{name}".replace(os.sep, "/"))
    return found
