"""What ``orch submit --dry-run`` says about the code snapshot a submit would take (docs/snapshots.md).

The same collection as the submit (:func:`orchestrator.records.snapshots.collect.collect`: git's file lists,
one ``stat`` per file, the size check), then whether an identical snapshot is already stored under the
job root, answered read-only: a file the stat cache knows is not read; any other file is hashed, never
copied, and the first content the store lacks ends the search (the snapshot would be new). Nothing is
written: no job root, no object, no tree, no manifest, no stat cache.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import ConfigError
from orchestrator.records.snapshots.collect import Collected, collect
from orchestrator.records.snapshots.store import (
    cached_entries,
    check_size,
    load_stats,
    object_path,
    reusable,
    snapshot_root,
    source_of,
    stat_file,
)
from orchestrator.spec.runconfig import RunConfig
from orchestrator.spec.snapshot import human_size, manifest_digest

_CHUNK = 1 << 20
# Outside git the snapshot copies one folder: which one, as the dry run names it (by the job's kind)
_FOLDER_OF = {"script": "the script's folder", "module": "the current directory", None: "the job file's folder"}


@dataclass(frozen=True)
class SnapshotPreview:
    """The snapshot a submit would take; ``off`` says why there is none (then nothing else is set)."""

    off: str | None = None
    source: str | None = None
    git: bool = False
    folder: str = ""  # outside git: which folder is copied ("the script's folder", ...)
    commit: str | None = None
    dirty: bool = False
    files: int = 0
    bytes: int = 0
    store: str = ""  # <job root>/.snapshots
    reuses: str | None = None  # the digest of the identical snapshot already stored (None: a new one)
    problem: str | None = None  # why the submit would stop (the snapshot is too large, git failed)

    def line(self) -> str:
        """The dry run's ``# code snapshot: ...`` line."""
        if self.off is not None:
            return f"# code snapshot: {self.off}\n"
        if self.problem is not None:
            return f"# code snapshot: of {self.source}: the submit would stop: {self.problem}\n"
        if not self.git:
            where = f"not a git tree: {self.folder}"
        elif self.commit is None:
            where = "git, no commit yet"
        else:
            where = f"git {self.commit[:12]}{', dirty' if self.dirty else ''}"
        fate = (f"reuses {self.reuses[:12]}, an identical snapshot in {self.store}" if self.reuses is not None
                else f"a new snapshot in {self.store}, taken at submit")
        return (f"# code snapshot: {self.source} ({where}; {self.files} files, {human_size(self.bytes)}): "
                f"{fate}\n")

    def as_dict(self) -> dict[str, Any]:
        """The dry run's ``"snapshot"`` in ``--json``."""
        return {"taken": self.off is None and self.problem is None, "off": self.off, "source": self.source,
                "git": self.git, "commit": self.commit, "dirty": self.dirty, "files": self.files,
                "bytes": self.bytes, "store": self.store or None, "reuses": self.reuses, "problem": self.problem}


def preview(config: RunConfig, enabled: bool | None) -> SnapshotPreview:
    """What ``snapshot_config(config, enabled)`` would take, without writing anything."""
    if enabled is False:
        return SnapshotPreview(off="off (--no-snapshot): every task runs the files in place")
    if enabled is None and not config.launcher.snapshot:
        return SnapshotPreview(off="off (launcher.snapshot in cluster.yaml): every task runs the files in place")
    folder = source_of(config)
    if folder is None:
        return SnapshotPreview(off=f"none: {config.job_name} is a built-in job (part of orch, never copied)")
    job_root = Path(config.job_dir).parent
    script = config.script
    folder_name, store = _FOLDER_OF[script.kind if script is not None else None], str(snapshot_root(job_root))
    try:
        found = collect(folder, job_root, config.launcher.snapshot_max_mb * 2**20)
        check_size(found, config.launcher.snapshot_max_mb)
    except ConfigError as exc:
        return SnapshotPreview(source=str(folder), folder=folder_name, store=store,
                               problem=f"{exc.message} (HINT: {exc.hint})" if exc.hint else exc.message)
    if script is not None:
        found.add_dir(script.cwd)
    return SnapshotPreview(source=str(found.source), git=found.git, commit=found.commit, dirty=found.dirty,
                           files=len(found.files), bytes=found.size, folder=folder_name, store=store,
                           reuses=stored_digest(found, job_root))


def code_digest(config: RunConfig, enabled: bool | None) -> str | None:
    """The digest the snapshot a submit takes now would have (read-only: each file the stat cache does not
    know is hashed, nothing is stored); None when the submit takes no snapshot. ConfigError: it could not
    take one (too large). ``orch mcp`` compares it between a plan and its submit."""
    folder = source_of(config) if enabled is not False and (enabled or config.launcher.snapshot) else None
    if folder is None:
        return None
    job_root = Path(config.job_dir).parent
    found = collect(folder, job_root, config.launcher.snapshot_max_mb * 2**20)
    check_size(found, config.launcher.snapshot_max_mb)
    if config.script is not None:
        found.add_dir(config.script.cwd)
    entries, _, misses = cached_entries(found, load_stats(stat_file(snapshot_root(job_root), found.source)))
    for index in misses:
        rel, _, executable = entries[index]
        entries[index] = (rel, _sha256(found.source / rel), executable)
    return manifest_digest(entries, found.links, found.dirs)


def stored_digest(found: Collected, job_root: Path) -> str | None:
    """The digest of the stored snapshot identical to ``found``, else None (read-only)."""
    store = snapshot_root(job_root)
    if not store.is_dir():
        return None
    entries, _, misses = cached_entries(found, load_stats(stat_file(store, found.source)))
    for index in misses:  # files the stat cache does not know (new, edited, or only touched)
        rel, _, executable = entries[index]
        try:
            sha = _sha256(found.source / rel)
        except OSError:
            return None
        if not object_path(store, sha, executable).exists():
            return None  # content the store lacks: the snapshot would be new
        entries[index] = (rel, sha, executable)
    digest = manifest_digest(entries, found.links, found.dirs)
    return digest if reusable(store, digest) else None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
