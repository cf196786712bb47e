"""Code snapshots: what ``job.json`` records about the copy of the code a job runs from (pure).

At submit, orch copies the code a job needs into ``<job_root>/.snapshots/<digest>/`` (written by
:mod:`orchestrator.records.snapshots.store`); every task of every attempt runs from there. ``job.json``
keeps what the user submitted (``script.target``, ``script.cwd``, ``job_file``: the paths on disk, which
the resume check and the listings show) and adds ``snapshot``; a task maps those paths into the
snapshot with :func:`relocate` (the one rule):

| path at submit time                          | inside the task                                   |
| -------------------------------------------- | ------------------------------------------------- |
| inside the snapshot's source (``source``)    | the same relative path inside ``path``            |
| anywhere else                                | unchanged                                         |

That moves the code: the script, its folder (first on ``sys.path``), ``sys.path`` entries inside the
source, the job file, and for ``-m`` the submit directory as the import folder. The working directory is
not moved: every rank of a script works in the submit directory itself (``script.cwd``), so a relative
path it writes lands there and never in the read-only snapshot (docs/snapshots.md, "Where the script
runs"). What the snapshot leaves out of its tree (git-ignored files and folders, data, checkpoints,
``.venv``, large files) is a symbolic link in the snapshot to the original (``links`` in the manifest),
so a path relative to the script's own file (``Path(__file__).parent / "data"``) reaches the same files.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

SNAPSHOT_DIR = ".snapshots"  # under launcher.job_root (a second user's: store_name)
OBJECTS_DIR = ".objects"  # under SNAPSHOT_DIR: one read-only file per content (sha256, executable bit)
MANIFEST_SUFFIX = ".json"  # <job_root>/.snapshots/<digest>.json: the manifest of <digest>/
FILE_MAX_MB = 10  # a single file larger than this is never copied (it is linked, as data is)
# Folders never copied, at any depth (linked to the original instead): version control, environments
# and caches. (Outside git, data and output folders are left out too: records/snapshots/store.py DATA_DIRS.)
SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints", "node_modules", ".snapshots",
})
# File suffixes never copied (weights, arrays, archives, datasets), linked to the original instead.
SKIP_SUFFIXES = frozenset({
    ".pt", ".pth", ".ckpt", ".safetensors", ".bin", ".npy", ".npz", ".h5", ".hdf5", ".pkl", ".pickle",
    ".parquet", ".arrow", ".tar", ".gz", ".tgz", ".zip", ".xz", ".zst", ".7z", ".sqsh", ".sif", ".onnx",
    ".pyc", ".so", ".o",
})


class Snapshot(BaseModel):
    """``job.json``'s ``snapshot``: where the job's code was copied to and what it was."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    digest: str = Field(description="sha256 of the manifest: the snapshot's folder name")
    path: str = Field(description="the snapshot folder, <job_root>/.snapshots/<digest>")
    source: str = Field(description="what was copied: the git work tree, or the folder")
    commit: str | None = Field(default=None, description="git HEAD at submit time (None: no repository)")
    dirty: bool = Field(default=False, description="the work tree differed from HEAD (edits, new files)")
    files: int = Field(default=0, ge=0)
    bytes: int = Field(default=0, ge=0)

    def summary(self) -> str:
        """``a1b2c3d4e5f6 (git 0123abcd, dirty; 12 files, 34.5 KB)`` for orch status and the submit line."""
        where = "no git repository" if self.commit is None else (
            f"git {self.commit[:12]}{', dirty' if self.dirty else ''}")
        return f"{self.digest[:12]} ({where}; {self.files} files, {human_size(self.bytes)})"


def relocate(path: str, snapshot: Snapshot | None) -> str:
    """A submit-time path as a task sees it (the module table): inside the source -> inside the snapshot."""
    if snapshot is None:
        return path
    source = snapshot.source.rstrip(os.sep) or os.sep
    if path == source:
        return snapshot.path
    prefix = source if source.endswith(os.sep) else source + os.sep
    if path.startswith(prefix):
        return os.path.join(snapshot.path, path[len(prefix):])
    return path


def store_name(owner: int | None, me: int) -> str:
    """The folder of this user's snapshot store under the job root (pure; ``owner``: the uid owning
    ``<job root>/.snapshots``, None when it does not exist). ``.snapshots`` when it is this user's or not there
    yet; in a job root shared with other users, where another user made it (private to them):
    ``.snapshots-<uid>``, so that no user reads or writes another's code."""
    return SNAPSHOT_DIR if owner is None or owner == me else f"{SNAPSHOT_DIR}-{me}"


def is_store_name(name: str) -> bool:
    """A snapshot store's folder name (:func:`store_name`): never copied into a snapshot, never a job folder."""
    return name == SNAPSHOT_DIR or (name.startswith(SNAPSHOT_DIR + "-") and name[len(SNAPSHOT_DIR) + 1:].isdigit())


def _skipped_dir(part: str) -> bool:
    return part in SKIP_DIRS or is_store_name(part)


def skip_reason(relpath: str, size: int, *, file_max_bytes: int = FILE_MAX_MB * 2**20) -> str | None:
    """Why a file of the source is not copied (None: it is). ``relpath`` uses ``/``."""
    parts = relpath.split("/")
    for part in parts[:-1]:
        if _skipped_dir(part):
            return f"in a {part}/ folder"
    name = parts[-1]
    suffix = os.path.splitext(name)[1].lower()
    if suffix in SKIP_SUFFIXES:
        return f"a {suffix} file (weights, data or an archive)"
    if size > file_max_bytes:
        return f"larger than {file_max_bytes // 2**20} MB"
    return None


def top_skipped(relpath: str) -> str:
    """The part of a skipped path that becomes a link: its first SKIP_DIRS folder, else the file."""
    parts = relpath.split("/")
    for index, part in enumerate(parts[:-1]):
        if _skipped_dir(part):
            return "/".join(parts[:index + 1])
    return relpath


def manifest_digest(files: Iterable[tuple[str, str, bool]], links: Iterable[tuple[str, str]],
                    dirs: Iterable[str] = ()) -> str:
    """The snapshot's digest: sha256 of its sorted entries (path, content sha256, executable) and links
    (path, target). Identical trees from one place get one digest; the links name the source's
    location, so two clones of one repository get two (their files are stored once all the same)."""
    text = json.dumps({"files": sorted(files), "links": sorted(links), "dirs": sorted(dirs)}, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def human_size(size: int) -> str:
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def too_large_message(total: int, limit_mb: int, largest: Sequence[tuple[str, int]], source: str) -> tuple[str, str]:
    """(message, hint) of a snapshot over ``launcher.snapshot_max_mb``, naming the largest files."""
    names = ", ".join(f"{name} ({human_size(size)})" for name, size in largest)
    return (f"the code snapshot of {source} would be {human_size(total)}, over launcher.snapshot_max_mb "
            f"({limit_mb} MB); largest files: {names}",
            "add data and outputs to .gitignore (or move them out of the folder), raise "
            "launcher.snapshot_max_mb in cluster.yaml, or pass --no-snapshot to run the files in place")


def relpath_of(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def source_folder(job_file: str, script_kind: str | None, script_target: str | None, cwd: str | None,
                  builtin_jobs: Path) -> Path | None:
    """Where the snapshot's tree is looked for (its git work tree, else this folder); None: nothing to
    copy (a built-in job is part of orch itself, like the installed packages, which are never copied)."""
    if script_kind == "script" and script_target:
        return Path(script_target).parent
    if script_kind == "module" and cwd:
        return Path(cwd)
    path = Path(job_file)
    if path.is_relative_to(builtin_jobs):
        return None
    return path.parent


def relocate_paths(paths: Sequence[str], snapshot: Snapshot | None, workdir: str) -> list[str]:
    """``sys.path`` of a task: every entry inside the source moved into the snapshot. A relative entry
    (``PYTHONPATH=.``, ``''``) names a folder of the working directory (the submit directory), which is
    not in the snapshot: it is made absolute first, so it imports the snapshot's copy all the same."""
    if snapshot is None:
        return list(paths)
    return [relocate(os.path.normpath(os.path.join(workdir, p)), snapshot) for p in paths]


def takes_snapshot(asked: bool | None, default: bool, script: bool, job_file: Path, builtin_jobs: Path) -> bool:
    """Whether a submit takes a code snapshot: ``asked`` (False: --no-snapshot) else ``launcher.snapshot``;
    never for a built-in job (part of orch)."""
    on = default if asked is None else asked
    return on and (script or not job_file.is_relative_to(builtin_jobs))
