"""``orch list``'s rows: the jobs submitted from here, from their folders under ``launcher.job_root``.

The state is ``orch status``'s (:mod:`orchestrator.slurm.jobstate`: one batched squeue, sacct or the job
completion log for finished jobs, then the folder: ``NOT_QUEUED`` when sbatch refused a job,
``COMPLETED`` when Slurm forgot it but its result.json exists). Without Slurm the folders still list.
A folder whose job id Slurm now gives to another job (ids restart; two clusters may share one job
root) shows its own records, with REASON "job id reused".
Array elements are listed as jobs of their own (``<array id>_<index>``).

Bounded for any number of folders: the ``limit`` newest jobs are shown (0: all). Only the folders shown are
read (their names give the order), and Slurm is asked about their ids in batches
(:func:`orchestrator.slurm.client.id_batches`), never on one unbounded command line. The jobs submitted from
here to remote clusters come from the index alone (:func:`remote_rows`).
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass
from typing import Any

from orchestrator.records import jobdirs
from orchestrator.remote.forward import remote_rows as _remote_rows
from orchestrator.service.jobs import Scope, cluster_name, job_root_of, reconciled
from orchestrator.service.status import with_attempts, with_failure, with_goodput
from orchestrator.slurm import jobstate


@dataclass(frozen=True)
class JobList:
    """``orch list``'s rows (``--json``'s objects), their job folders, whether the job root holds more than the
    ``limit`` shown, and that limit (``sys.maxsize - 1`` for a number too large to mean anything but all)."""

    rows: list[dict[str, Any]]
    jobs: list[jobdirs.JobDir]
    more: bool
    limit: int


def shown_limit(limit: int) -> int:
    """``--limit`` as a bound: a 20-digit number means "all" (islice takes no more)."""
    return min(limit, sys.maxsize - 1)


def list_table(scope: Scope, limit: int) -> JobList:
    """The rows of the ``limit`` newest job folders of the job root, their folders, and whether there are more
    (``limit`` 0: all)."""
    newest = jobdirs.iter_job_paths(job_root_of(scope))  # newest first, by name: nothing read yet
    bound = shown_limit(limit)
    paths = list(itertools.islice(newest, bound + 1) if bound > 0 else newest)
    more = bound > 0 and len(paths) > bound
    jobs = reconciled([jobdirs.read_job_dir(path) for path in (paths[:bound] if more else paths)])  # shown only
    table = jobstate.rows([(job.job_id, job) for job in jobs], tolerant=True, details=False,
                          cluster=cluster_name(scope))
    return JobList(table, jobs, more, bound)


def with_blame(listed: JobList) -> JobList:
    """``listed`` with each job's attempts, failure and goodput, as ``orch status`` reads them (orch mcp's list)."""
    jobs = listed.jobs
    return JobList(with_goodput(with_failure(with_attempts(listed.rows, jobs), jobs), jobs), jobs, listed.more,
                   listed.limit)


def remote_rows(limit: int) -> list[dict[str, str | None]]:
    """The rows of the jobs submitted from here to remote clusters (docs/remote.md), from the index alone."""
    return _remote_rows(limit)
