"""``orch status [JOBID|DIR ...] [--json]``: Slurm's state of jobs, live or finished.

Live jobs come from one ``squeue`` call; finished ones from one batched ``sacct`` call when the cluster keeps
accounting, else from the job completion log (see ``slurm.job_status``); the state is read by
:mod:`orchestrator.slurm.jobstate`, as ``orch list`` reads it. Without arguments: the newest jobs submitted
from here (their folders under ``launcher.job_root``), a submit killed after sbatch included. With ``--json``
one job gives one object, several give a list; each has at least ``job_id`` and ``state`` (Slurm's name, e.g.
``COMPLETED``), ``elapsed`` (``[D-]HH:MM:SS``) and ``gpu_hours``. EPOCH/STEP/LOSS (and, while it runs,
SAMPLES/S and ETA: the rest of this epoch plus the epochs after it at its pace) come from the job folder's
``progress.json`` (rank 0 rewrites it every few seconds while training; ``progress`` in ``--json``); METRICS
is the last epoch's loss and task metrics from ``metrics.jsonl`` (``last_epoch``). When the ranks' outcome
records show a failure, ``failure`` (``--json``; a ``# job ...`` line below the table) names the rank to look
at: the one that failed, or the one that stopped making progress while the others gave up waiting for it in a
collective, and the timeout that applied
(:mod:`orchestrator.records.restarts.blame`).
Under Slurm a rank killed without a word is named as the batch script's restart helper names it: its
verdict in ``attempts.json``, else srun's report at the end of the batch log, with its node (``node``;
:func:`orchestrator.slurm.jobstate.failure`).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from orchestrator.commands._common import add_cluster_argument, add_json_argument, print_json, scope
from orchestrator.commands._tables import format_rows, shown_columns
from orchestrator.records.jobdirs import (
    JobDir,
    is_job_id,
    iter_job_dirs,
    newest_with_id,
)
from orchestrator.records.restarts.attempts import format_attempts, format_ledger, read_attempts, restarts_shown
from orchestrator.records.restarts.attempts import restarts as attempt_restarts
from orchestrator.records.restarts.world import judge
from orchestrator.records.sweeps import elements as sweep_elements
from orchestrator.records.sweeps import find_sweep, is_sweep, sweep_of
from orchestrator.records.training import metrics_cell, progress_cells, read_metrics, read_progress, read_result
from orchestrator.service.jobs import (
    Found,
    chosen_cluster_name,
    cluster_name,
    find_job,
    indexed,
    job_root_of,
    reconciled,
)
from orchestrator.slurm import jobstate
from orchestrator.slurm.jobstate import records_restart as _records_restart
from orchestrator.slurm.tracking import interrupted, read_token
from orchestrator.spec.numbers import to_float
from orchestrator.spec.snapshot import Snapshot
from orchestrator.task.outcome import read_outcomes

# column title -> key of a row (one table for the human view)
COLUMNS: dict[str, str] = {
    "JOBID": "job_id",
    "STATE": "state",
    "EXIT": "exit",  # the exit code; code:signal when a signal ended the job (0:15: cancelled); - while it runs
    "RESTARTS": "restarts_shown",  # in-job restarts + requeues, e.g. 1+0
    "ELAPSED": "elapsed",
    "GPU_H": "gpu_hours",
    "EPOCH": "epoch",
    "STEP": "step",
    "LOSS": "loss",
    "SAMPLES/S": "rate",
    "ETA": "eta",
    "METRICS": "metrics",
    "NODES": "nodes",
    "REASON": "reason",
    "NAME": "name",
    "FOLDER": "job_dir",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("jobs", nargs="*", metavar="JOBID|DIR", help="Slurm job ids or job folders")
    parser.add_argument("--limit", type=int, default=20, metavar="N",
                        help="without JOBID: how many of the newest jobs to show (default 20)")
    add_cluster_argument(parser)
    add_json_argument(parser)


Targets = list[tuple[str | None, JobDir | None]]


def _targets(args: argparse.Namespace) -> tuple[Targets, list[str | None]]:
    """The (job id, folder) pairs to show, and for each how the id asked for led to it when that id's job was
    submitted again under a new one (``38 -> 39 (resubmitted without node2)``; None: shown as asked)."""
    root = job_root_of(scope(args))
    if not args.jobs:
        # newest first, read lazily: only the folders shown are read; a submit killed after sbatch (no id
        # yet, its token written) is shown too: reconciled when Slurm holds its job, else UNKNOWN and why
        tracked: Iterator[JobDir] = (j for j in iter_job_dirs(root)
                                     if j.job_id or (j.mode == "slurm" and read_token(j.path) is not None))
        shown = reconciled(list(itertools.islice(tracked, min(max(args.limit, 0), sys.maxsize))))  # islice's bound
        return [(job.job_id, job) for job in shown], [None] * len(shown)
    by_id: dict[str, JobDir] | None = None
    cluster = cluster_name(scope(args))
    targets: Targets = []
    followed: dict[int, str] = {}  # position in targets -> how the id asked for led there
    for ref in args.jobs:
        folder = Path(ref).expanduser()
        members = sweep_elements(folder) if not is_job_id(ref) and is_sweep(folder) else []
        if members:  # a sweep's folder: each element's latest run (none yet: find_job says so)
            targets += [(job.job_id, job) for job in reconciled(members)]
            continue
        if not is_job_id(ref):
            job = find_job(ref, scope(args))  # a local run (orch run) has no job id: its folder's records tell
            lost = job.job_id is None and interrupted(job.path) is not None  # UNKNOWN, and why
            targets.append((job.job_id if job.mode == "local" or lost else job.queued_id(), job))
            continue
        found = None if args.cluster else indexed(ref, cluster)  # the index first: no --cluster needed
        if found is None:
            if by_id is None:  # one pass for all ids given: reads only job_id files until all are found
                by_id = newest_with_id(root, [r for r in args.jobs if is_job_id(r)])
            held = by_id.get(ref)
            found = Found(held) if held is not None else None
        sweep = find_sweep(root, ref) if found is None else None  # an array id (any of its submissions)
        if sweep is not None:
            targets += [(job.job_id, job) for job in reconciled(sweep_elements(sweep))]
            continue
        if found is None and args.cluster:  # an id whose job was submitted again: the index knows its folder
            found = indexed(ref, cluster, only_cluster=True)
        if found is not None and found.followed is not None:
            followed[len(targets)] = found.followed
            targets.append((found.job.job_id, found.job))
            continue
        targets.append((ref, found.job if found is not None else None))
    return targets, [followed.get(i) for i in range(len(targets))]


def _names_sweep(ref: str, targets: list[tuple[str | None, JobDir | None]]) -> bool:
    """Did ``ref`` name a sweep (its folder or array id), which shows as its elements?"""
    job = targets[0][1]
    return (job is not None and sweep_of(job.path) is not None and job.job_id != ref
            and Path(ref).expanduser().resolve() != job.path)


def with_training(rows: list[dict[str, Any]], jobs: list[JobDir | None]) -> list[dict[str, Any]]:
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


def with_attempts(rows: list[dict[str, Any]], jobs: list[JobDir | None]) -> list[dict[str, Any]]:
    """Add ``attempts`` (attempts.json), ``in_job_restarts`` and ``restarts_shown`` (``1+0``)."""
    for row, job in zip(rows, jobs, strict=True):
        found = read_attempts(job.path) if job else []
        row.update(attempts=found, in_job_restarts=attempt_restarts(found)[0],
                   restarts_shown=restarts_shown(found, row.get("restarts")))
    return rows


def with_failure(rows: list[dict[str, Any]], jobs: list[JobDir | None]) -> list[dict[str, Any]]:
    """Add ``failure``: which rank to look at, from the ranks' outcome records (None: no failure)."""
    for row, job in zip(rows, jobs, strict=True):
        found = jobstate.failure(job, _records_restart(row)) if job else None
        row["failure"] = found.as_dict() if found is not None else None
    return rows


def with_world(rows: list[dict[str, Any]], jobs: list[JobDir | None]) -> list[dict[str, Any]]:
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


def with_goodput(rows: list[dict[str, Any]], jobs: list[JobDir | None]) -> list[dict[str, Any]]:
    """Add ``goodput``: where the job's time went (result.json's ledger, once it finished; else None)."""
    for row, job in zip(rows, jobs, strict=True):
        result = read_result(job.path) if job is not None else None
        goodput = result.get("goodput") if isinstance(result, dict) else None
        row["goodput"] = goodput if isinstance(goodput, dict) else None
    return rows


def status_table(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[JobDir | None], bool]:
    """``orch status``'s rows (``--json``'s objects), each row's job folder, and whether one job was named (not
    a sweep, which stands for its elements): then its start-up phases, code snapshot and working directory too.
    Empty: no jobs submitted from here."""
    targets, followed = _targets(args)
    if not targets:
        return [], [], False
    one = len(args.jobs) == 1 and len(targets) == 1 and (followed[0] is not None
                                                         or not _names_sweep(args.jobs[0], targets))
    jobs = [job for _, job in targets]
    table = with_goodput(with_world(with_failure(with_attempts(with_training(
        jobstate.rows(list(targets), cluster=(chosen_cluster_name if args.jobs else cluster_name)(scope(args))),
        jobs), jobs), jobs), jobs), jobs)
    for row, chain in zip(table, followed, strict=True):
        row["followed"] = chain  # the id asked for ran before: "38 -> 39 (resubmitted without node2)"
    if one:
        startup, snap, workdir = _startup(jobs[0]), _snapshot(jobs[0]), _workdir(jobs[0])
        extra = {"startup": startup or None, "snapshot": snap.model_dump(mode="json") if snap else None,
                 "workdir": workdir}
        table[0].update({key: value for key, value in extra.items() if value is not None})
    return table, jobs, one


def run(args: argparse.Namespace) -> int:
    table, jobs, one = status_table(args)
    if not table:
        if args.json:
            print_json([])
            return 0
        # nothing of this user's yet (a new user on a shared job root, too): said, not an error
        print(f"# no jobs of yours under {job_root_of(scope(args))} yet (a job id, or the --cluster whose "
              "launcher.job_root holds your job folders, shows others)")
        return 0
    startup, workdir = table[0].get("startup"), table[0].get("workdir")
    snap = _snapshot(jobs[0]) if one else None
    if args.json:
        print_json(table[0] if one else table)
    else:
        print(format_rows(table, shown_columns(table, COLUMNS)))
        for row in table:  # orch submit --preflight=exclude: the nodes a preflight took out
            row_job = row["job_id"] or row["job_dir"]  # a local run: its folder
            if row.get("followed"):
                print(f"# job {row['followed']}: shown as job {row['job_id']}")
            if row.get("reused"):
                print(f"# job {row['job_id']}: {jobstate.REUSED}: {row['reused']}; shown from its folder's records")
            if row.get("excluded"):
                print(f"# job {row['job_id']}: {row['excluded']}")
            failure = row.get("failure")
            if failure:
                on = f"rank {failure['rank']} ran on {failure['node']}; " if failure.get("node") else ""
                print(f"# job {row_job}: {failure['message']} ({on}orch logs {row_job} shows "
                      "that rank's last lines)")
            if row.get("world"):
                print(f"# job {row_job}: warning: {row['world']['message']}; {row['world']['hint']}")
        if snap is not None:
            print(f"# code snapshot: {snap.summary()}, {snap.path}")
        if workdir is not None:
            print(f"# working directory: {workdir} (the submit directory: relative paths the script writes land there)")
        if startup:
            from orchestrator.records.startup import format_startup

            print(format_startup(startup))
        if one:
            _print_attempts(table[0])
    return 0


def _print_attempts(row: dict[str, Any]) -> None:
    """orch status JOB: each attempt (attempts.json) and where the time went (result.json's goodput)."""
    for line in format_attempts(row.get("attempts") or []):
        print(f"# {line}")
    if row.get("goodput"):
        print(f"# {format_ledger(row['goodput'])}")


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
