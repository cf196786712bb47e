"""``orch status``'s reading of jobs, live or finished, as rows (``--json``'s objects): which jobs a call names
(ids, folders, sweeps, the index; none: the newest jobs submitted from here), and each row's columns.

Live jobs come from one ``squeue`` call; finished ones from one batched ``sacct`` call when the cluster keeps
accounting, else from the job completion log (see ``slurm.queries.job_status``); the state is read by
:mod:`orchestrator.slurm.jobstate`, as ``orch list`` reads it. Without job refs: the newest jobs submitted
from here (their folders under ``launcher.job_root``), a submit killed after sbatch included. Each row has at
least ``job_id`` and ``state`` (Slurm's name, e.g. ``COMPLETED``), ``elapsed`` (``[D-]HH:MM:SS``) and
``gpu_hours``. EPOCH/STEP/LOSS (and, while it runs, SAMPLES/S and ETA: the rest of this epoch plus the epochs
after it at its pace) come from the job folder's ``progress.json`` (rank 0 rewrites it every few seconds while
training; ``progress``); METRICS is the last epoch's loss and task metrics from ``metrics.jsonl``
(``last_epoch``). When the ranks' outcome records show a failure, ``failure`` names the rank to look at: the
one that failed, or the one that stopped making progress while the others gave up waiting for it in a
collective, and the timeout that applied (:mod:`orchestrator.records.restarts.blame`). Under Slurm a rank
killed without a word is named as the batch script's restart helper names it: its verdict in
``attempts.json``, else srun's report at the end of the batch log, with its node (``node``;
:func:`orchestrator.slurm.jobstate.failure`). ``orch list``'s rows (:mod:`orchestrator.service.joblist`) add
the same columns for ``orch mcp``'s list tool.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.records.jobdirs import JobDir, is_job_id, iter_job_dirs, newest_with_id, read_job_dir
from orchestrator.records.restarts.attempts import format_attempts, format_ledger, read_attempts, restarts_shown
from orchestrator.records.restarts.attempts import restarts as attempt_restarts
from orchestrator.records.restarts.world import judge
from orchestrator.records.sweeps import elements as sweep_elements
from orchestrator.records.sweeps import find_sweep, is_sweep, sweep_of
from orchestrator.records.training import metrics_cell, progress_cells, read_metrics, read_progress, read_result
from orchestrator.service.jobs import (
    Found,
    Scope,
    chosen_cluster_name,
    cluster_name,
    find_job,
    indexed,
    job_root_of,
    reconciled,
)
from orchestrator.slurm import jobstate
from orchestrator.slurm import queries as slurm_queries
from orchestrator.slurm.jobstate import REUSED
from orchestrator.slurm.jobstate import records_restart as _records_restart
from orchestrator.slurm.state import JobStatus
from orchestrator.slurm.tracking import interrupted, read_token
from orchestrator.spec.numbers import to_float
from orchestrator.spec.snapshot import Snapshot
from orchestrator.task.outcome import read_outcomes

__all__ = ["REUSED", "StatusTable", "attempt_lines", "startup_text", "status_table", "targets", "with_attempts",
           "with_failure", "with_goodput", "with_training", "with_world"]

Targets = list[tuple[str | None, JobDir | None]]


@dataclass(frozen=True)
class StatusTable:
    """``orch status``'s rows (``--json``'s objects), each row's job folder (None: no folder holds its id), and
    whether one job was named (not a sweep, which stands for its elements): then its row holds its start-up
    phases, code snapshot and working directory too, and ``snapshot`` is that job's. Empty: no jobs."""

    rows: list[dict[str, Any]]
    jobs: list[JobDir | None]
    one: bool
    snapshot: Snapshot | None = None


def targets(refs: Sequence[str], scope: Scope, limit: int = 20) -> tuple[Targets, list[str | None]]:
    """The (job id, folder) pairs to show, and for each how the id asked for led to it when that id's job was
    submitted again under a new one (``38 -> 39 (resubmitted without node2)``; None: shown as asked).
    No ``refs``: the ``limit`` newest jobs of the job root."""
    root = job_root_of(scope)
    if not refs:
        # newest first, read lazily: only the folders shown are read; a submit killed after sbatch (no id
        # yet, its token written) is shown too: reconciled when Slurm holds its job, else UNKNOWN and why
        tracked: Iterator[JobDir] = (j for j in iter_job_dirs(root)
                                     if j.job_id or (j.mode == "slurm" and read_token(j.path) is not None))
        shown = reconciled(list(itertools.islice(tracked, min(max(limit, 0), sys.maxsize))))  # islice's bound
        return [(job.job_id, job) for job in shown], [None] * len(shown)
    by_id: dict[str, JobDir] | None = None
    cluster = cluster_name(scope)
    found_targets: Targets = []
    followed: dict[int, str] = {}  # position in targets -> how the id asked for led there
    for ref in refs:
        folder = Path(ref).expanduser()
        members = sweep_elements(folder) if not is_job_id(ref) and is_sweep(folder) else []
        if members:  # a sweep's folder: each element's latest run (none yet: find_job says so)
            found_targets += [(job.job_id, job) for job in reconciled(members)]
            continue
        if not is_job_id(ref):
            job = find_job(ref, scope)  # a local run (orch run) has no job id: its folder's records tell
            lost = job.job_id is None and interrupted(job.path) is not None  # UNKNOWN, and why
            found_targets.append((job.job_id if job.mode == "local" or lost else job.queued_id(), job))
            continue
        found = None if scope.cluster else indexed(ref, cluster)  # the index first: no --cluster needed
        if found is None:
            if by_id is None:  # one pass for all ids given: reads only job_id files until all are found
                by_id = newest_with_id(root, [r for r in refs if is_job_id(r)])
            held = by_id.get(ref)
            found = Found(held) if held is not None else None
        sweep = find_sweep(root, ref) if found is None else None  # an array id (any of its submissions)
        if sweep is not None:
            found_targets += [(job.job_id, job) for job in reconciled(sweep_elements(sweep))]
            continue
        if found is None and scope.cluster:  # an id whose job was submitted again: the index knows its folder
            found = indexed(ref, cluster, only_cluster=True)
        if found is not None and found.followed is not None:
            followed[len(found_targets)] = found.followed
            found_targets.append((found.job.job_id, found.job))
            continue
        found_targets.append((ref, found.job if found is not None else None))
    return found_targets, [followed.get(i) for i in range(len(found_targets))]


def _names_sweep(ref: str, found: Targets) -> bool:
    """Did ``ref`` name a sweep (its folder or array id), which shows as its elements?"""
    job = found[0][1]
    return (job is not None and sweep_of(job.path) is not None and job.job_id != ref
            and Path(ref).expanduser().resolve() != job.path)


def with_training(rows: list[dict[str, Any]], jobs: Sequence[JobDir | None]) -> list[dict[str, Any]]:
    """Add where training is (progress.json) and the last epoch's metrics (metrics.jsonl) to each row."""
    for row, job in zip(rows, jobs, strict=True):
        progress = read_progress(job.path) if job else None
        row.update(progress_cells(progress))  # EPOCH/STEP/LOSS/SAMPLES/S/ETA
        if row.get("state") != "RUNNING":  # a pace and a time left only while it runs
            row["rate"] = row["eta"] = None
        row["progress"] = progress
        records = read_metrics(job.path) if job else []
        row["last_epoch"] = records[-1] if records else None  # the task's metrics, by name
        row["metrics"] = metrics_cell(row["last_epoch"])
    return rows


def with_attempts(rows: list[dict[str, Any]], jobs: Sequence[JobDir | None]) -> list[dict[str, Any]]:
    """Add ``attempts`` (attempts.json), ``in_job_restarts`` and ``restarts_shown`` (``1+0``)."""
    for row, job in zip(rows, jobs, strict=True):
        found = read_attempts(job.path) if job else []
        row.update(attempts=found, in_job_restarts=attempt_restarts(found)[0],
                   restarts_shown=restarts_shown(found, row.get("restarts")))
    return rows


def with_failure(rows: list[dict[str, Any]], jobs: Sequence[JobDir | None]) -> list[dict[str, Any]]:
    """Add ``failure``: which rank to look at, from the ranks' outcome records (None: no failure)."""
    for row, job in zip(rows, jobs, strict=True):
        found = jobstate.failure(job, _records_restart(row)) if job else None
        row["failure"] = found.as_dict() if found is not None else None
    return rows


def with_world(rows: list[dict[str, Any]], jobs: Sequence[JobDir | None]) -> list[dict[str, Any]]:
    """Add ``world``: a script's ranks that never formed one process group (records/restarts/world.py); None
    when they did, when the job is no script of several ranks, or when a failure already says what went wrong."""
    for row, job in zip(rows, jobs, strict=True):
        config = job.config if job is not None else None
        found = None
        if job is not None and config is not None and config.script is not None and not row.get("failure"):
            records, _ = read_outcomes(job.path)
            run = job.job_id if job.mode == "slurm" else "local"
            found = judge(records, config.world_size, run=run, restart=_records_restart(row)) if run else None
        row["world"] = found.as_dict() if found is not None else None
    return rows


def with_goodput(rows: list[dict[str, Any]], jobs: Sequence[JobDir | None]) -> list[dict[str, Any]]:
    """Add ``goodput``: where the job's time went (result.json's ledger, once it finished; else None)."""
    for row, job in zip(rows, jobs, strict=True):
        result = read_result(job.path) if job is not None else None
        goodput = result.get("goodput") if isinstance(result, dict) else None
        row["goodput"] = goodput if isinstance(goodput, dict) else None
    return rows


def status_table(refs: Sequence[str], scope: Scope, limit: int = 20) -> StatusTable:
    """``orch status``'s rows of the jobs ``refs`` name (ids, folders, sweeps; none: the ``limit`` newest), with
    their training, attempts, failure, world and goodput columns; one job named: its start-up phases, code
    snapshot and working directory too."""
    found, followed = targets(refs, scope, limit)
    if not found:
        return StatusTable([], [], False)
    one = len(refs) == 1 and len(found) == 1 and (followed[0] is not None or not _names_sweep(refs[0], found))
    jobs = [job for _, job in found]
    table = with_goodput(with_world(with_failure(with_attempts(with_training(
        jobstate.rows(list(found), cluster=(chosen_cluster_name if refs else cluster_name)(scope)),
        jobs), jobs), jobs), jobs), jobs)
    for row, chain in zip(table, followed, strict=True):
        row["followed"] = chain  # the id asked for ran before: "38 -> 39 (resubmitted without node2)"
    if one:
        startup, snap, workdir = _startup(jobs[0]), _snapshot(jobs[0]), _workdir(jobs[0])
        extra = {"startup": startup or None, "snapshot": snap.model_dump(mode="json") if snap else None,
                 "workdir": workdir}
        table[0].update({key: value for key, value in extra.items() if value is not None})
    return StatusTable(table, jobs, one, _snapshot(jobs[0]) if one else None)


def attempt_lines(row: dict[str, Any]) -> list[str]:
    """One job's attempts (attempts.json), each a line, and where the time went (result.json's goodput)."""
    lines = format_attempts(row.get("attempts") or [])
    return [*lines, format_ledger(row["goodput"])] if row.get("goodput") else lines


def startup_text(startup: dict[str, float]) -> str:
    """Where a job's start-up time went, as ``orch status JOB`` shows it below the table."""
    from orchestrator.records.startup import format_startup

    return format_startup(startup)


def _snapshot(job: JobDir | None) -> Snapshot | None:
    """The code snapshot the job runs from (job.json's ``snapshot``: digest, git commit, dirty)."""
    return job.config.snapshot if job is not None and job.config is not None else None


def _workdir(job: JobDir | None) -> str | None:
    """Where the job's script runs (job.json's ``script.cwd``: the submit directory); None: a job file."""
    config = job.config if job is not None else None
    return config.script.cwd if config is not None and config.script is not None else None


def _startup(job: JobDir | None) -> dict[str, float] | None:
    """Where the job's start-up time went (result.json's ``startup``, written by rank 0)."""
    result = read_result(job.path) if job is not None else None
    startup = result.get("startup") if isinstance(result, dict) else None
    if not isinstance(startup, dict):
        return None
    found = {str(k): to_float(v) for k, v in startup.items()}
    return {k: v for k, v in found.items() if v is not None}


def job_status(job_id: str, job_dir: Path) -> JobStatus:
    """One job's status as Slurm has it (``orchestrator.submit()``'s handle): squeue, then sacct or the
    completion log, an array element by its raw id (the completion log's name for it)."""
    raw_id = read_job_dir(job_dir).raw_job_id
    return slurm_queries.job_status([job_id], raw_ids={job_id: raw_id} if raw_id else None)[job_id]


def local_status(job_id: str, state: str) -> JobStatus:
    """A local run's status, in Slurm's words (the state submitit's local executor gives, mapped)."""
    return JobStatus(job_id=job_id, state=state, source="submitit")


def final_metrics(job_dir: Path) -> dict[str, Any] | None:
    """The run's ``result.json`` (None: none yet, or a script job, which writes none)."""
    return read_result(job_dir)
