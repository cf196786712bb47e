"""Helpers shared by the follow-up verbs (status, logs, cancel, list, plot): where job folders are (an id
``orch submit`` printed finds its folder after the job was submitted again under a new id)."""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import OrchError, SlurmError
from orchestrator.records.cache import find_cluster
from orchestrator.records.jobdirs import JobDir, find_job_dir, is_job_id, job_root, read_job_dir
from orchestrator.records.jobindex import lookup
from orchestrator.slurm import lineage
from orchestrator.slurm.tracking import reconcile
from orchestrator.spec.cluster import CLUSTER_ENV_VAR, Cluster
from orchestrator.spec.runconfig import JOB_FILE

log = logging.getLogger(__name__)


def cluster_or_none(args: argparse.Namespace) -> Cluster | None:
    """The cluster.yaml in use, or None when none was asked for and ./cluster.yaml does not exist.

    The follow-up verbs only need ``launcher.job_root`` from it, so they work without one (with
    the default job root); a file that was named but is missing or invalid is still an error.
    """
    return find_cluster(getattr(args, "cluster", None), os.environ, Path.cwd(), required=False)


def job_root_from_args(args: argparse.Namespace) -> Path:
    return job_root(cluster_or_none(args))


def cluster_name(args: argparse.Namespace) -> str | None:
    """The name of the cluster.yaml in use (None: none), to tell one cluster's job ids from another's where
    the verb reads that file's job root (``orch list``, ``orch top``, ``orch status`` of all jobs), and to
    prefer its folders in the index."""
    cluster = cluster_or_none(args)
    return cluster.name if cluster is not None else None


def chosen_cluster_name(args: argparse.Namespace) -> str | None:
    """The name of the cluster file the user chose (``--cluster``, ``$ORCH_CLUSTER``), to judge the job of an
    id or folder they named: None when none was chosen. A ``./cluster.yaml`` found only by being in the
    current folder (the shipped example, in a clone) says nothing of which cluster Slurm's answers come
    from; the job folder's own records name its cluster."""
    if not getattr(args, "cluster", None) and not os.environ.get(CLUSTER_ENV_VAR):
        return None
    return cluster_name(args)


@dataclass(frozen=True)
class Found:
    """A job folder found from what the user typed; ``followed``: the id asked for is an earlier job of the
    folder, whose job runs under a new id now (``38 -> 39 (resubmitted without node2)``, slurm/lineage.py)."""

    job: JobDir
    followed: str | None = None


def _in_folder(path: Path, job_id: str) -> Found | None:
    """The folder at ``path`` when it holds ``job_id`` now, or held it before its job was submitted again."""
    if not (path / JOB_FILE).is_file():
        return None
    job = read_job_dir(path)
    if job.job_id == job_id:
        return Found(job)
    followed = lineage.chain(path, job_id, job.job_id) if job.job_id is not None else None
    return Found(job, followed) if followed is not None else None


def indexed(job_id: str, cluster: str | None, *, only_cluster: bool = False) -> Found | None:
    """The folder of ``job_id`` from the user's index of submitted jobs (records/jobindex.py): the newest
    record whose folder still holds that id or moved on from it (resubmitted: the folder's job now), one of
    the cluster in use first (``only_cluster``: only one of it, or of no recorded cluster)."""
    others: list[Found] = []
    for record in lookup(job_id):
        mine = cluster is None or record.cluster in (None, cluster)
        found = _in_folder(Path(record.job_dir), job_id) if mine or not only_cluster else None
        if found is not None and mine:
            return found
        if found is not None:
            others.append(found)
    return others[0] if others else None


def indexed_job(job_id: str, cluster: str | None) -> JobDir | None:
    """:func:`indexed`'s folder."""
    found = indexed(job_id, cluster)
    return found.job if found is not None else None


def locate(ref: str, args: argparse.Namespace) -> Found:
    """A job folder from a job id or a folder path. Without ``--cluster``, a job id is looked up in the
    user's index of submitted jobs first (so the submit's --cluster is not needed again), then under
    the job root of the cluster.yaml in use; an id no folder holds any more is followed through the
    index to the folder whose job was submitted again under a new id."""
    by_id = is_job_id(ref)
    if by_id and not getattr(args, "cluster", None):
        found = indexed(ref, cluster_name(args))
        if found is not None:
            return found
    try:
        return Found(reconciled([find_job_dir(ref, job_root_from_args(args))])[0])
    except OrchError:
        named = bool(getattr(args, "cluster", None))
        followed = indexed(ref, cluster_name(args), only_cluster=True) if by_id and named else None
        if followed is None:
            raise
        return followed


def find_job(ref: str, args: argparse.Namespace) -> JobDir:
    """:func:`locate`'s folder."""
    return locate(ref, args).job


def reconciled(jobs: Sequence[JobDir]) -> list[JobDir]:
    """``jobs``, with the id of each job whose ``orch submit`` died after sbatch queued it found now (one
    squeue call, only when a Slurm folder has no id: :func:`orchestrator.slurm.tracking.reconcile`)."""
    waiting = [job.path for job in jobs if job.job_id is None and job.mode == "slurm"]
    if not waiting:
        return list(jobs)
    try:
        found = reconcile(waiting)
    except SlurmError as exc:  # the folder's own records still answer (UNKNOWN, and why)
        log.info("cannot look for the jobs of %d folders without an id: %s", len(waiting), exc.message)
        return list(jobs)
    return [read_job_dir(job.path) if job.path in found else job for job in jobs]


def format_rows(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, str]) -> str:
    """A plain text table: ``columns`` maps each title to a row key; empty cells show ``-``."""
    header = list(columns)
    body = [[_cell(row.get(key)) for key in columns.values()] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in body]
    return "\n".join(lines)


# columns a job may leave empty: hidden when every row is empty there (a script reports no epochs)
OPTIONAL_COLUMNS = ("GPU_H", "EPOCH", "STEP", "LOSS", "SAMPLES/S", "ETA", "METRICS")


def shown_columns(rows: list[dict[str, Any]], columns: dict[str, str],
                  optional: tuple[str, ...] = OPTIONAL_COLUMNS) -> dict[str, str]:
    """``columns`` without the optional ones that no row fills."""
    return {title: key for title, key in columns.items()
            if title not in optional or any(row.get(key) not in (None, "") for row in rows)}


def _cell(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)
