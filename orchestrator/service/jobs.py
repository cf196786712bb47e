"""Where job folders are, for every follow-up verb (status, logs, cancel, list, plot, top, the MCP tools, the API's
handles): the cluster file in use and its job root (:class:`Scope`), and the folder of an id or path (an id
``orch submit`` printed finds its folder after the job was submitted again under a new id)."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import OrchError, SlurmError
from orchestrator.records.cache import find_cluster
from orchestrator.records.jobdirs import JobDir, find_job_dir, is_job_id, read_job_dir
from orchestrator.records.jobindex import lookup
from orchestrator.records.joblayout import job_root
from orchestrator.slurm import lineage
from orchestrator.slurm.tracking import reconcile
from orchestrator.spec.cluster import Cluster
from orchestrator.spec.clusterfiles import CLUSTER_ENV_VAR
from orchestrator.spec.runconfig import JOB_FILE

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Scope:
    """The cluster file a follow-up verb reads, as the user named it: ``--cluster`` (a path or a named file;
    None: not named, then ``$ORCH_CLUSTER``, then ``./cluster.yaml`` if there is one)."""

    cluster: str | None = None


def cluster_or_none(scope: Scope) -> Cluster | None:
    """The cluster.yaml in use, or None when none was asked for and ./cluster.yaml does not exist.

    The follow-up verbs only need ``launcher.job_root`` from it, so they work without one (with
    the default job root); a file that was named but is missing or invalid is still an error.
    """
    return find_cluster(scope.cluster, os.environ, Path.cwd(), required=False)


def job_root_of(scope: Scope) -> Path:
    """The job root of the cluster file in use (``launcher.job_root``; the default without one)."""
    return job_root(cluster_or_none(scope))


def cluster_name(scope: Scope) -> str | None:
    """The name of the cluster.yaml in use (None: none), to tell one cluster's job ids from another's where
    the verb reads that file's job root (``orch list``, ``orch top``, ``orch status`` of all jobs), and to
    prefer its folders in the index."""
    cluster = cluster_or_none(scope)
    return cluster.name if cluster is not None else None


def chosen_cluster_name(scope: Scope) -> str | None:
    """The name of the cluster file the user chose (``--cluster``, ``$ORCH_CLUSTER``), to judge the job of an
    id or folder they named: None when none was chosen. A ``./cluster.yaml`` found only by being in the
    current folder (the shipped example, in a clone) says nothing of which cluster Slurm's answers come
    from; the job folder's own records name its cluster."""
    if not scope.cluster and not os.environ.get(CLUSTER_ENV_VAR):
        return None
    return cluster_name(scope)


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


def locate(ref: str, scope: Scope) -> Found:
    """A job folder from a job id or a folder path. Without ``--cluster``, a job id is looked up in the
    user's index of submitted jobs first (so the submit's --cluster is not needed again), then under
    the job root of the cluster.yaml in use; an id no folder holds any more is followed through the
    index to the folder whose job was submitted again under a new id."""
    by_id = is_job_id(ref)
    if by_id and not scope.cluster:
        found = indexed(ref, cluster_name(scope))
        if found is not None:
            return found
    try:
        return Found(reconciled([find_job_dir(ref, job_root_of(scope))])[0])
    except OrchError:
        named = bool(scope.cluster)
        followed = indexed(ref, cluster_name(scope), only_cluster=True) if by_id and named else None
        if followed is None:
            raise
        return followed


def find_job(ref: str, scope: Scope) -> JobDir:
    """:func:`locate`'s folder."""
    return locate(ref, scope).job


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
