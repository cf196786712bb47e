"""``orch clean``: remove the code snapshots no job folder refers to any more (and their objects).

A snapshot ``<job_root>/.snapshots/<digest>/`` is kept while a job folder under the job root (an array
element too) names it in ``job.json`` (``snapshot.digest``), and for ``CLEAN_GRACE_S`` after it was
last created or reused (a submit writes job.json right after taking the snapshot). An object of
``.objects/`` is removed when no snapshot links it any more (its link count is 1). Half-built trees
(``.tmp-*``) older than the grace period go too.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.records.jobdirs import iter_job_dirs
from orchestrator.records.snapshots.store import CLEAN_GRACE_S, STAT_DIR, TMP_PREFIX, remove_tree, snapshot_root
from orchestrator.spec.snapshot import MANIFEST_SUFFIX, OBJECTS_DIR


@dataclass
class CleanReport:
    kept: list[str] = field(default_factory=list)  # digests still named by a job folder (or recent)
    removed: list[str] = field(default_factory=list)  # digests removed (or, with dry_run, to remove)
    objects: int = 0  # store objects removed (dry run: that would be)
    freed: int = 0  # bytes


def referenced(job_root: Path) -> set[str]:
    """The digests the job folders under ``job_root`` name."""
    return {job.config.snapshot.digest for job in iter_job_dirs(job_root)
            if job.config is not None and job.config.snapshot is not None}


def _age(path: Path, now: float) -> float:
    try:
        return now - path.stat().st_mtime
    except OSError:
        return float("inf")


def clean(job_root: Path, *, dry_run: bool = False, grace: float = CLEAN_GRACE_S) -> CleanReport:
    store = snapshot_root(job_root)
    report = CleanReport()
    if not store.is_dir():
        return report
    used = referenced(job_root)
    now = time.time()
    doomed: set[str] = set()
    for entry in sorted(os.scandir(store), key=lambda e: e.name):
        name = entry.name
        if name in (OBJECTS_DIR, STAT_DIR):
            continue
        if name.startswith(TMP_PREFIX):
            if _age(Path(entry.path), now) > grace and not dry_run:
                remove_tree(Path(entry.path))
            continue
        digest = name.removesuffix(MANIFEST_SUFFIX)
        if digest in used or _age(store / (digest + MANIFEST_SUFFIX), now) <= grace:
            if digest not in report.kept:
                report.kept.append(digest)
            continue
        doomed.add(digest)
    for digest in sorted(doomed):
        report.removed.append(digest)
        if not dry_run:
            remove_tree(store / digest)
            with contextlib.suppress(FileNotFoundError):
                (store / (digest + MANIFEST_SUFFIX)).unlink()
    report.objects, report.freed = _orphans(store, doomed if dry_run else set(), remove=not dry_run)
    return report


def _links_in(store: Path, digests: set[str]) -> dict[int, int]:
    """inode -> how many links the snapshots ``digests`` hold (what their removal would free)."""
    counts: dict[int, int] = {}
    for digest in digests:
        for here, _, names in os.walk(store / digest):
            for name in names:
                with contextlib.suppress(OSError):
                    info = os.lstat(os.path.join(here, name))
                    if not os.path.islink(os.path.join(here, name)):
                        counts[info.st_ino] = counts.get(info.st_ino, 0) + 1
    return counts


def _orphans(store: Path, pending: set[str], *, remove: bool) -> tuple[int, int]:
    """Objects no snapshot links (``pending``: snapshots a dry run would remove, counted as gone)."""
    doomed_links = _links_in(store, pending) if pending else {}
    count = freed = 0
    objects = store / OBJECTS_DIR
    if not objects.is_dir():
        return 0, 0
    for here, _, names in os.walk(objects):
        for name in names:
            path = Path(here) / name
            try:
                info = path.stat()
            except OSError:
                continue
            if name.startswith(TMP_PREFIX) or info.st_nlink - doomed_links.get(info.st_ino, 0) > 1:
                continue
            count += 1
            freed += info.st_size
            if remove:
                with contextlib.suppress(OSError):
                    path.unlink()
    return count, freed
