"""One reading of a job's state, shared by ``orch status`` and ``orch list``: Slurm's answer (one
batched :func:`orchestrator.slurm.queries.job_status` call for all jobs) combined with what the job folder
records, in one time format.

States are Slurm's names (``COMPLETED``, ``CANCELLED``, ``FAILED``, ``PENDING``, ...), plus
``NOT_QUEUED`` for a folder sbatch refused. When Slurm no longer knows a job (``UNKNOWN``) the
folder may still tell: a ``result.json`` means it completed. Local runs (``orch run``) have no
Slurm state: ``COMPLETED`` with a result, else how their last attempt ended (``attempts.json``, written
by ``orch run`` for a script and a job file alike: ``LOCAL_END_STATES``, ``FAILED`` for every kind of
failure, with its exit code), else ``UNKNOWN`` (still running, or killed before it could record its
end). GPU-hours come from accounting when the
cluster keeps it (sacct's AllocTRES x ElapsedRaw, summed over the runs of a requeued job), else they
are the elapsed time of the current run (from whichever client answered) times the GPUs of ``job.json``.
``exit_code`` is None until a job ends (Slurm says 0 meanwhile); ``exit``, the EXIT cell, shows Slurm's
``code:signal`` when a signal ended it (``0:15``: cancelled).
``failure`` says which rank to look at when the ranks' outcome records of the current run show a
failure (:func:`orchestrator.records.restarts.blame.blame`): its own error, or the rank that stopped making progress;
under Slurm with what the batch script's restart helper knew too (srun's report, attempts.json).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from orchestrator.errors import SlurmError
from orchestrator.records import stacks
from orchestrator.records.jobdirs import JobDir
from orchestrator.records.jobindex import read_submitted, same_submit
from orchestrator.records.joblayout import log_path
from orchestrator.records.restarts.attempts import ATTEMPTS_FILE, read_attempts
from orchestrator.records.restarts.blame import Blame, BlameKind, blame
from orchestrator.records.restarts.rankoutcome import current_run
from orchestrator.records.restarts.seen import complete
from orchestrator.records.training import read_result
from orchestrator.restarts.policy import Ended, blamed_node
from orchestrator.slurm import queries as slurm
from orchestrator.slurm import state as slurmstate
from orchestrator.slurm.preflight import status_note
from orchestrator.slurm.stepreport import read_report, seen_from
from orchestrator.slurm.tracking import interrupted
from orchestrator.spec.numbers import to_float
from orchestrator.spec.units import parse_time
from orchestrator.task.outcome import read_outcomes

log = logging.getLogger(__name__)

REUSED = "job id reused"  # the reason shown when Slurm's job of this id is another job
NOT_QUEUED = "NOT_QUEUED"  # orch's own state: sbatch refused the job, its folder says why
FOLDER_STATES = {NOT_QUEUED: slurmstate.StateInfo("not queued", True)}


def statuses(targets: Sequence[tuple[str | None, JobDir | None]], *, tolerant: bool = False,
             details: bool = True) -> dict[str, slurmstate.JobStatus]:
    """Slurm's status of every queued target, in one batched call. ``tolerant``: when Slurm cannot
    be asked, every job is UNKNOWN (``orch list`` still lists); else the SlurmError stands."""
    ids = [job_id for job_id, _ in targets if job_id]
    if not ids:
        return {}
    raw = {job.job_id: job.raw_job_id for _, job in targets if job and job.job_id and job.raw_job_id}
    try:
        return slurm.job_status(ids, details=details, raw_ids=raw)
    except SlurmError as exc:
        if not tolerant:
            raise
        log.info("no job states: %s", exc.message)
        return {}


def reused(job: JobDir | None, status: slurmstate.JobStatus | None, cluster: str | None = None) -> str | None:
    """Why Slurm's answer for this folder's job id is about another job, or None when it may be trusted.

    Slurm's ids restart when a cluster is rebuilt, and two clusters may share one job root: Slurm's
    job is this folder's only when the cluster in use (``cluster``, cluster.yaml's name, when known)
    is the folder's, and Slurm's job name and SubmitTime agree with what the folder recorded
    (``submitted.json``, else job.json's creation time). What either side does not know is no mismatch.
    """
    if job is None or status is None or status.source == "none" or job.config is None:
        return None
    record = read_submitted(job.path)
    if record is not None and record.job_id != job.job_id:
        record = None  # an earlier attempt's (--preflight=exclude resubmits): not this id's record
    theirs = (record.cluster if record else None) or job.config.cluster_name
    if cluster and theirs and cluster != theirs:
        return f"the folder's job was submitted to cluster {theirs}, not {cluster}"
    ours = record.job_name if record else job.config.job_name
    if status.name is not None and status.name.strip() != ours:
        return f"Slurm's job {status.job_id} is named {status.name.strip()!r}, the folder's job {ours!r}"
    requeued = bool(status.restarts)  # Slurm moves SubmitTime to the requeue
    if record is not None:
        same = same_submit(status.submit_time, record.submitted, requeued=requeued)
    else:
        same = same_submit(status.submit_time, job.config.created, created=True, requeued=requeued)
    if same is False:
        return (f"Slurm's job {status.job_id} was submitted at {status.submit_time}, the folder's job at "
                f"{record.submitted if record else job.config.created}")
    return None


def describe(job_id: str | None, job: JobDir | None, status: slurmstate.JobStatus | None,
             cluster: str | None = None) -> dict[str, Any]:
    """One row for status and list: the state (one function for both) and what the folder adds.
    When Slurm's job of this id is another job (:func:`reused`), the row is the folder's own records,
    with ``reason`` "job id reused" and ``reused`` saying why."""
    row: dict[str, Any] = {"job_id": job_id, "state": "UNKNOWN", "source": "none", "name": None, "reason": None,
                           "nodes": None, "elapsed": None, "exit_code": None, "signal": None, "restarts": None,
                           "submit_time": None, "reused": None}
    why = reused(job, status, cluster)
    if why is not None:
        row.update(reason=REUSED, reused=why)
        status = None
    if status is not None:
        row.update(status.as_dict())
    if job is not None and (status is None or status.state == "UNKNOWN"):
        row.update(_from_folder(job))
    info = FOLDER_STATES.get(row["state"]) or slurmstate.state_info(row["state"])
    row.update(orch_state=info.orch, terminal=info.terminal)
    if not info.terminal:  # Slurm says ExitCode 0:0 until a job ends: no exit code yet
        row.update(exit_code=None, signal=None)
    row["exit"] = exit_cell(row["exit_code"], row["signal"])
    config = job.config if job else None
    row["name"] = row["name"] or (job.name if job else None)
    row["mode"] = job.mode if job else "slurm"
    row["created"] = format_created(job.created) if job else None
    row["job_dir"] = str(job.path) if job else None
    gpus = config.nodes * config.gpus_per_node if config else 0
    if (not gpus and config is not None) or row.get("gpu_hours") == 0:
        row["gpu_hours"] = None  # a CPU run has no GPU-hours (nor has a job accounting gave no GPUs)
    elif row.get("gpu_hours") is None:  # accounting's TRES (every run) when it answered, else this run's time
        row["gpu_hours"] = gpu_hours(row["elapsed"], gpus)
    row["excluded"] = status_note(job.path) if job else None  # orch submit --preflight=exclude
    return row


def exit_cell(code: object, signal: object) -> str | None:
    """The EXIT cell: the exit code, or Slurm's ``code:signal`` when a signal ended the job (a cancelled job:
    ``0:15``); None (``-``) before the job ended."""
    if not isinstance(code, int) or isinstance(code, bool):
        return None
    return f"{code}:{signal}" if isinstance(signal, int) and not isinstance(signal, bool) and signal else str(code)


def _from_folder(job: JobDir) -> dict[str, Any]:
    if job.job_id is None and job.mode != "local":
        return {"state": NOT_QUEUED if job.submit_error is not None else "UNKNOWN", "source": "folder",
                "reason": interrupted(job.path)}
    if read_result(job.path) is not None:
        return {"state": "COMPLETED", "source": "folder"}
    return _local_end(job) if job.mode == "local" else {}


# attempts.json's kind of a local run's last attempt -> its state (any other kind: a failure, FAILED)
LOCAL_END_STATES = {"completed": "COMPLETED", "preempted": "PREEMPTED", "stopped": "CANCELLED"}


def _local_end(job: JobDir) -> dict[str, Any]:
    """How a local run ended, from its last attempt; nothing while an attempt may still be running (the
    last one asked for a restart, or ``orch run --resume`` started a run that has not ended yet)."""
    attempts = read_attempts(job.path)
    if not attempts:
        return {}
    last = attempts[-1]
    resumed = job.config.restarts if job.config is not None else 0
    if last.get("restarted") or last.get("requeue", 0) != resumed:
        return {}
    code = last.get("exit_code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    state = LOCAL_END_STATES.get(str(last.get("kind")), "FAILED")
    reason = f"exit code {code}" if state == "FAILED" and code is not None else None
    starts = [to_float(a.get("started")) for a in attempts if a.get("requeue", 0) == resumed]
    begun, ended = min((t for t in starts if t is not None), default=None), to_float(last.get("ended"))
    elapsed = _hms(ended - begun) if begun is not None and ended is not None else None
    return {"state": state, "source": "folder", "exit_code": code, "reason": reason, "elapsed": elapsed}


def _hms(seconds: float) -> str:
    """Seconds as ``[D-]HH:MM:SS``, the one format of elapsed times (``slurm.state.normalize_elapsed``)."""
    days, rest = divmod(int(max(0.0, seconds)), 86_400)
    return (f"{days}-" if days else "") + f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"


def records_restart(row: dict[str, Any]) -> int | None:
    """The restart count the current run's outcome records carry: requeues plus its attempt in the allocation."""
    restarts = row.get("restarts")
    if not isinstance(restarts, int):
        return None
    mine = [a for a in row.get("attempts") or [] if a.get("requeue") == restarts]
    if not mine:
        return restarts
    last = mine[-1]
    attempt = last.get("attempt") if isinstance(last.get("attempt"), int) else 0
    return restarts + attempt + (1 if last.get("restarted") else 0)


def failure(job: JobDir, restart: int | None = None) -> Blame | None:
    """:func:`judge`, and where each rank was when a hang ended (their stack files: ``records/stacks.py``)."""
    records, _ = read_outcomes(job.path)
    run = job.job_id if job.mode == "slurm" else "local"
    return stacks.explained(job.path, judge(job, restart), [r for r in records if r.run == run],
                            job.config.world_size if job.config else None, run=run, restart=restart)


def judge(job: JobDir, restart: int | None = None) -> Blame | None:
    """Who stopped the job, from the outcome records of its current run (``restart``: the records'
    restart count when known, else the newest run recorded); None when they show no failure.

    Under Slurm, what the batch script's restart helper (``slurm/restart.py``) knew too, as it knew it:
    its verdict on the attempt of these records (``attempts.json``'s ``blamed_rank``/``blamed_node``)
    when it judged it, else srun's report at the end of the batch log (``slurm/stepreport.py``: the last
    block is the last attempt's) completes the records (``records/restarts/seen.py``) and names the node srun
    named. A local run, a folder without either: the records alone."""
    records, notes = read_outcomes(job.path)
    if not records:
        return None
    run = job.job_id if job.mode == "slurm" else "local"
    size = job.config.world_size if job.config else None
    alone = blame(records, world_size=size, run=run, restart=restart, notes=notes)
    if job.mode != "slurm" or run is None:
        return alone
    mine, _ = current_run([r for r in records if r.run == run], run, restart)
    if not mine:
        return alone
    current = next(iter(mine.values())).restart
    judged = _judged(read_attempts(job.path), run, current, min(r.started for r in mine.values()))
    if judged is not None:
        return _verdict(alone, judged)
    report = read_report(job.path, run)
    tasks_per_node = job.config.tasks_per_node if job.config else 1
    seen = seen_from(report, run=run, restart=current, tasks_per_node=tasks_per_node)
    codes = {k: v for k, v in seen.codes.items() if size is None or k < size} if seen is not None else {}
    if seen is None or not codes:
        return alone
    seen = dataclasses.replace(seen, codes=codes)
    ours = [r for r in records if r.run == run and r.restart == current]
    merged = [r for r in records if r.run != run or r.restart != current] + complete(ours, seen)
    found = blame(merged, world_size=size, run=run, restart=restart,
                  notes=[*notes, f"completed with srun's report in {log_path(job.path, run)}"])
    if found is None or not found.ranks:
        return found
    by_rank, _ = current_run([r for r in merged if r.run == run], run, restart)
    node = blamed_node(Ended(attempt=0, exit_code=found.exit_code or 1, blame=found, records=by_rank))
    return dataclasses.replace(found, node=report.node(found.ranks[0]) or node) if node else found


MAX_NODE_NAME, MAX_REASON = 255, 2000  # what an outcome record holds (records/restarts/blame.py's RankOutcome)
# attempts.json's kinds of a blamed attempt, as a line (the records alone may no longer show it)
JUDGED_WORDS: dict[BlameKind, str] = {
    "vanished": "ended without a word (killed by a signal, out of memory, or its node was lost)",
    "stuck": "stopped making progress", "failed": "failed",
    "early_exit": "exited with code 0 in the middle of the run",
    "all_waited": "had finished the fewest steps when every rank gave up waiting",
    "stopped": "was stopped from outside (scancel, the time limit, or an interrupt)",
}


def _judged(attempts: Sequence[Mapping[str, Any]], run: str, restart: int,
            started: float) -> Mapping[str, Any] | None:
    """The restart helper's entry for the attempt of these records: this job's, restart = requeue +
    attempt, ended after they started (None: not judged yet, the batch log's last step is theirs)."""
    for entry in attempts[::-1]:
        requeue, attempt, ended = entry.get("requeue", 0), entry.get("attempt"), to_float(entry.get("ended"))
        if not isinstance(requeue, int) or not isinstance(attempt, int) or entry.get("job") not in (None, run):
            continue
        if requeue + attempt == restart and ended is not None and ended >= started:
            return entry
    return None


def _verdict(alone: Blame | None, entry: Mapping[str, Any]) -> Blame | None:
    """attempts.json's verdict on the attempt (blamed_rank, blamed_node) over the records' own."""
    rank, node, reason = entry.get("blamed_rank"), entry.get("blamed_node"), entry.get("reason")
    kind = next((k for k in JUDGED_WORDS if k == entry.get("kind")), None)
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0 or kind is None:
        return alone
    node = node if isinstance(node, str) and 0 < len(node) <= MAX_NODE_NAME else None
    if alone is not None and alone.ranks[:1] == (rank,):
        return dataclasses.replace(alone, node=node)
    message = (f"rank {rank} {JUDGED_WORDS[kind]}" + (f" ({reason[:MAX_REASON]})" if isinstance(reason, str) else "")
               + f" (the batch script's verdict on attempt {entry.get('attempt')}, in {ATTEMPTS_FILE})")
    return Blame(kind=kind, ranks=(rank,), message=message, node=node, notes=alone.notes if alone else ())


def rows(targets: Sequence[tuple[str | None, JobDir | None]], *, tolerant: bool = False,
         details: bool = True, cluster: str | None = None) -> list[dict[str, Any]]:
    """One row per target; ``cluster``: the name of the cluster.yaml in use (None: not known)."""
    found = statuses(targets, tolerant=tolerant, details=details)
    return [describe(job_id, job, found.get(job_id) if job_id else None, cluster) for job_id, job in targets]


def format_created(text: str) -> str:
    """A job folder's creation time in one format: ISO 8601 in UTC (``+00:00``), to the second, whatever
    TZ says (older folders may hold naive local times: read as local; a TZ that cannot apply: as written)."""
    try:
        moment = datetime.fromisoformat(text)
        return moment.astimezone(timezone.utc).isoformat(timespec="seconds")
    except (ValueError, OverflowError, OSError):
        return text


def gpu_hours(elapsed: str | None, gpus: int) -> float | None:
    """GPU-hours of ``elapsed`` (``[D-]HH:MM:SS``) on ``gpus`` GPUs, to 1/1000; None when unknown."""
    if not elapsed or not gpus:
        return None
    try:
        seconds = parse_time(elapsed)
    except ValueError:
        return None
    return None if seconds is None else round(seconds * gpus / 3600, 3)
