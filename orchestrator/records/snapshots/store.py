"""Code snapshots on disk (the edge): collect, store, reuse and clean ``<job_root>/.snapshots/``.

Layout (a content-addressed tree with a manifest, so a snapshot can be shipped elsewhere as is)::

    <job_root>/.snapshots/.objects/<sha[:2]>/<sha>[x]   one read-only file per content (x: executable)
    <job_root>/.snapshots/<digest>/                      the tree: folders, hard links to objects, and
                                                         symbolic links to what it leaves out
    <job_root>/.snapshots/<digest>.json                  the manifest: files (path, sha256, executable,
                                                         size), links (path, target), git commit, dirty
    <job_root>/.snapshots/.stat/<source key>.json        (size, mtime, inode, ctime) -> sha256 per file,
                                                         so an unchanged tree is not read again

What is copied (:func:`collect`): in a git work tree, ``git ls-files -co --exclude-standard`` (tracked
files and untracked files git does not ignore); in no repository, the folder's files. Never copied
(each left-out entry becomes a symbolic link to the original, so relative paths still reach it):
git-ignored entries, the folders and file kinds of :mod:`orchestrator.spec.snapshot` (environments,
caches, weights, archives; outside git also data and output folders that are no Python package) and
files over ``FILE_MAX_MB``. A snapshot's folders and files are read-only: a job cannot change the
code another job (or its own requeue) runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Iterable
from pathlib import Path

from orchestrator.errors import ConfigError
from orchestrator.records.atomic import write_text_atomic
from orchestrator.records.snapshots.collect import Collected, collect
from orchestrator.records.trust import JOB_ROOT_MODE, make_job_root
from orchestrator.spec.job import BUILTIN_JOBS_DIR
from orchestrator.spec.runconfig import RunConfig
from orchestrator.spec.snapshot import (
    MANIFEST_SUFFIX,
    OBJECTS_DIR,
    SNAPSHOT_DIR,
    Snapshot,
    manifest_digest,
    source_folder,
    store_name,
    too_large_message,
)

log = logging.getLogger(__name__)

STAT_DIR = ".stat"
TMP_PREFIX = ".tmp-"
# orch clean leaves snapshots used (created or reused) this recently: a submit may be writing job.json
CLEAN_GRACE_S = 3600.0
_CHUNK = 1 << 20


# --- the content store ------------------------------------------------------------------------

def snapshot_root(job_root: Path) -> Path:
    """This user's snapshot store under ``job_root`` (``spec/snapshot.store_name``: ``.snapshots``, or
    ``.snapshots-<uid>`` where another user's ``.snapshots`` is there already)."""
    try:
        owner: int | None = os.stat(job_root / SNAPSHOT_DIR).st_uid
    except (OSError, ValueError):  # (a path Python cannot pass to the system: nothing there)
        owner = None
    return job_root / store_name(owner, os.getuid())


def object_path(store: Path, sha: str, executable: bool) -> Path:
    return store / OBJECTS_DIR / sha[:2] / (sha + ("x" if executable else ""))


def stat_file(store: Path, source: Path) -> Path:
    return store / STAT_DIR / (hashlib.sha256(os.fsencode(str(source))).hexdigest()[:24] + ".json")


def load_stats(path: Path) -> dict[str, list[object]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _mkdir(path: Path) -> None:
    path.mkdir(mode=JOB_ROOT_MODE, parents=True, exist_ok=True)


def _store_object(store: Path, src: Path, executable: bool) -> str:
    """Copy ``src`` into the store (hashing what is read); its sha256. An object already there is kept."""
    tmp_dir = store / OBJECTS_DIR
    _mkdir(tmp_dir)
    digest = hashlib.sha256()
    tmp = tmp_dir / f"{TMP_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
    try:
        with open(src, "rb") as fin, open(tmp, "xb") as fout:
            while chunk := fin.read(_CHUNK):
                digest.update(chunk)
                fout.write(chunk)
        sha = digest.hexdigest()
        target = object_path(store, sha, executable)
        if target.exists():
            tmp.unlink()
        else:
            _mkdir(target.parent)
            tmp.chmod(0o555 if executable else 0o444)
            os.replace(tmp, target)
        return sha
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def create(found: Collected, job_root: Path) -> Snapshot:
    """Store ``found`` under ``job_root``: reuse the snapshot when the tree is unchanged (nothing copied,
    nothing read: each file's content is known from its stat in the stat cache)."""
    make_job_root(job_root)
    store = snapshot_root(job_root)
    _mkdir(store)
    stats_path = stat_file(store, found.source)
    stats = load_stats(stats_path)
    entries, new_stats, misses = cached_entries(found, stats)
    if misses or not reusable(store, manifest_digest(entries, found.links, found.dirs)):
        missing = set(misses)  # a new tree: every object it links must be there (orch clean may have run)
        for index, (rel, sha, executable) in enumerate(entries):
            if index in missing or not object_path(store, sha, executable).exists():
                sha = _copy_in(store, found.source / rel, executable)
                entries[index] = (rel, sha, executable)
                new_stats[rel][4:] = [sha]
    digest = manifest_digest(entries, found.links, found.dirs)
    tree = store / digest
    manifest = store / (digest + MANIFEST_SUFFIX)
    if not reusable(store, digest):
        _build_tree(store, tree, entries, found.links, found.dirs)
        text = json.dumps({"version": 1, "digest": digest, "source": str(found.source), "commit": found.commit,
                           "dirty": found.dirty, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                           "files": [[rel, sha, exe, size] for (rel, sha, exe), (_, size, _) in
                                     zip(entries, found.files, strict=True)],
                           "links": [list(link) for link in found.links], "dirs": found.dirs}, indent=1)
        write_text_atomic(manifest, text + "\n", mode=0o640, fsync=False)
    else:
        os.utime(manifest)  # in use again: orch clean keeps it for CLEAN_GRACE_S
    if new_stats != stats:
        with contextlib.suppress(OSError):
            _mkdir(stats_path.parent)
            write_text_atomic(stats_path, json.dumps(new_stats), mode=0o600, fsync=False)
    return Snapshot(digest=digest, path=str(tree), source=str(found.source), commit=found.commit, dirty=found.dirty,
                    files=len(entries), bytes=found.size)


def cached_entries(found: Collected, stats: dict[str, list[object]]
                   ) -> tuple[list[tuple[str, str, bool]], dict[str, list[object]], list[int]]:
    """What the stat cache knows of ``found``: each file's (relpath, sha256, executable) with "" for a file
    that must be read, the stat cache of this tree, and the indexes of the files that must be read."""
    new_stats: dict[str, list[object]] = {}
    entries: list[tuple[str, str, bool]] = []
    misses: list[int] = []
    for index, (rel, _size, executable) in enumerate(found.files):
        key = found.stat_keys.get(rel) or []
        cached = stats.get(rel)
        sha = str(cached[4]) if isinstance(cached, list) and len(cached) == 5 and cached[:4] == key else ""
        if not sha:
            misses.append(index)
        entries.append((rel, sha, executable))
        new_stats[rel] = [*key, sha]
    return entries, new_stats, misses


def reusable(store: Path, digest: str) -> bool:
    return (store / (digest + MANIFEST_SUFFIX)).is_file() and (store / digest).is_dir()


def _copy_in(store: Path, path: Path, executable: bool) -> str:
    try:
        return _store_object(store, path, executable)
    except OSError as exc:
        raise ConfigError(f"cannot copy {path} into the code snapshot: {exc.strerror}",
                          hint=f"check the file, the space and permissions of {store}, or pass --no-snapshot") from None


def _build_tree(store: Path, tree: Path, entries: Iterable[tuple[str, str, bool]],
                links: Iterable[tuple[str, str]], dirs: Iterable[str]) -> None:
    tmp = store / f"{TMP_PREFIX}{tree.name[:16]}-{os.getpid()}-{os.urandom(3).hex()}"
    tmp.mkdir(mode=0o700)
    try:
        folders = {tmp}
        for rel in dirs:
            (tmp / rel).mkdir(mode=0o700, parents=True, exist_ok=True)
        for rel, sha, executable in entries:
            dest = tmp / rel
            if dest.parent not in folders:
                dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                folders.add(dest.parent)
            obj = object_path(store, sha, executable)
            try:
                os.link(obj, dest)
            except OSError:  # too many links to one object, or a file system without hard links
                shutil.copy2(obj, dest)
        for rel, target in links:
            dest = tmp / rel
            dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.symlink(target, dest)
        for here, dirs, _ in os.walk(tmp, topdown=False):
            for name in dirs:
                path = Path(here) / name
                if not path.is_symlink():
                    path.chmod(0o555)
        tmp.chmod(0o555)
        try:
            os.rename(tmp, tree)
        except OSError:
            if not tree.is_dir():
                raise
            remove_tree(tmp)  # another submit made the same snapshot meanwhile
    except BaseException:
        remove_tree(tmp)
        raise


def remove_tree(path: Path) -> None:
    """Remove a (read-only) snapshot tree."""
    if not path.exists() and not path.is_symlink():
        return
    for here, dirs, _ in os.walk(path):
        for name in dirs:
            with contextlib.suppress(OSError):
                sub = Path(here) / name
                if not sub.is_symlink():
                    sub.chmod(0o700)
    with contextlib.suppress(OSError):
        path.chmod(0o700)
    shutil.rmtree(path, ignore_errors=True)


def check_size(found: Collected, limit_mb: int) -> None:
    """A snapshot over ``launcher.snapshot_max_mb`` stops the submit, naming the largest files."""
    if found.size > limit_mb * 2**20:
        message, hint = too_large_message(found.size, limit_mb, found.largest(), str(found.source))
        if found.partial:
            message = message.replace(" would be ", " would be more than ", 1)
        raise ConfigError(message, hint=hint)


def take(folder: Path, job_root: Path, limit_mb: int, cwd: str | None = None) -> Snapshot:
    """Collect, check the size and store: the snapshot a job runs from (``cwd``: the submit directory,
    made in the snapshot when it lies in the tree, even without files of its own)."""
    found = collect(folder, job_root, limit_mb * 2**20)
    check_size(found, limit_mb)
    if cwd is not None:
        found.add_dir(cwd)
    return create(found, job_root)


def source_of(config: RunConfig) -> Path | None:
    """The folder whose tree a job's snapshot copies (None: a built-in job, nothing to copy)."""
    script = config.script
    return source_folder(config.job_file, script.kind if script else None, script.target if script else None,
                         script.cwd if script else None, BUILTIN_JOBS_DIR)


def snapshot_config(config: RunConfig, enabled: bool | None) -> RunConfig:
    """``config`` with the snapshot of its code taken (``enabled`` None: ``launcher.snapshot``)."""
    on = config.launcher.snapshot if enabled is None else enabled
    folder = source_of(config) if on else None
    if folder is None:
        return config
    job_root = Path(config.job_dir).parent
    snap = take(folder, job_root, config.launcher.snapshot_max_mb, config.script.cwd if config.script else None)
    return config.model_copy(update={"snapshot": snap})


__all__ = ["Collected", "cached_entries", "check_size", "collect", "create", "load_stats", "object_path",
           "remove_tree", "reusable", "snapshot_config", "snapshot_root", "stat_file", "take"]
