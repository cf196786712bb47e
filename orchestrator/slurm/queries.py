"""What Slurm says about jobs: squeue, sacct (accounting), the job completion log and ``scontrol show
job``, each asked in batches; :func:`job_status` combines them with as few calls as possible.

Every command runs through :mod:`orchestrator.slurm.client`'s Runner (``client.query``), the only place
Slurm's commands are run; the output parsers and the job-state table are :mod:`orchestrator.slurm.state`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace

from orchestrator.errors import SlurmError
from orchestrator.slurm.client import JOB_ID_RE, Runner, id_batches, query, run_command
from orchestrator.slurm.state import (
    SACCT_FORMAT,
    SACCT_TRES_FORMAT,
    SQUEUE_FORMAT,
    JobStatus,
    parse_sacct,
    parse_sacct_runs,
    parse_show_job,
    parse_squeue,
)

log = logging.getLogger(__name__)

_ACCOUNTING_DISABLED = "accounting storage is disabled"


def squeue(job_ids: Sequence[str] = (), *, runner: Runner = run_command) -> dict[str, JobStatus]:
    """Live jobs (and those finished less than MinJobAge ago), by job id as squeue prints it, with
    their restart count and pending reason (``BeginTime`` after a requeue), in one call.

    Text output, filtered by Slurm: ``squeue --json`` ignores ``--jobs`` in 22.05. Ids Slurm
    no longer knows are simply absent (squeue fails with "Invalid job id" when all are unknown).
    Many ids are asked for in batches (:func:`id_batches`), one call per batch.
    """
    argv = ["squeue", "--noheader", "--states=all", f"--Format={SQUEUE_FORMAT}"]
    if not job_ids:
        proc = query(argv, runner)
        return parse_squeue(proc.stdout) if proc.returncode == 0 else {}
    found: dict[str, JobStatus] = {}
    for batch in id_batches(job_ids):
        proc = query([*argv, "--jobs=" + ",".join(batch)], runner)
        if proc.returncode == 0:
            found.update(parse_squeue(proc.stdout))
    return found


# squeue -O fields of :func:`comments`: the array's id (a plain job's own id), then its comment (may hold '|')
COMMENT_FORMAT = "ArrayJobID:|,SubmitTime:|,Comment:"  # the comment last: it may hold "|"


def comments(*, runner: Runner = run_command) -> dict[str, tuple[str, str]]:
    """This user's jobs that Slurm holds, as {comment: (job id (an array's own id), Slurm's SubmitTime)}, in
    one squeue call (``--me``: squeue cannot filter by comment, so every job of the user is listed, unpadded)."""
    proc = query(["squeue", "--noheader", "--states=all", "--me", f"--Format={COMMENT_FORMAT}"], runner)
    found: dict[str, tuple[str, str]] = {}
    for line in proc.stdout.splitlines() if proc.returncode == 0 else []:
        job_id, sep, rest = line.partition("|")
        submit, sep2, comment = rest.partition("|")
        if sep and sep2 and JOB_ID_RE.fullmatch(job_id.strip()) and comment.strip():
            found.setdefault(comment.strip(), (job_id.strip(), submit.strip()))
    return found


def sacct(job_ids: Sequence[str], *, runner: Runner = run_command) -> dict[str, JobStatus] | None:
    """Finished (and live) jobs from accounting in one call; None when accounting is disabled.

    Text, not ``--json``: in 22.05.8 the JSON exit code says 0 for failed jobs.
    """
    argv = ["sacct", "--noheader", "--parsable2", "--allocations", "--duplicates", f"--format={SACCT_TRES_FORMAT}"]
    found: dict[str, JobStatus] = {}
    for batch in id_batches(job_ids):
        try:
            proc = query([*argv, "--jobs=" + ",".join(batch)], runner)
        except SlurmError as exc:
            if _ACCOUNTING_DISABLED in exc.message:
                return None
            raise
        if _ACCOUNTING_DISABLED in proc.stdout + proc.stderr:
            return None
        found.update(parse_sacct_runs(proc.stdout, batch))
    return found


def jobcomp(job_ids: Sequence[str], *, runner: Runner = run_command) -> dict[str, JobStatus]:
    """Finished jobs from the job completion log (``sacct --completion``), for clusters without
    accounting. Empty when no completion log is configured."""
    argv = ["sacct", "--completion", "--noheader", "--parsable2", f"--format={SACCT_FORMAT}"]
    found: dict[str, JobStatus] = {}
    for batch in id_batches(job_ids):
        try:
            proc = query([*argv, "--jobs=" + ",".join(batch)], runner)
        except SlurmError as exc:
            log.debug("sacct --completion failed: %s", exc.message)
            return found
        found.update(parse_sacct(proc.stdout, "jobcomp", batch))
    return found


def show_job(job_id: str, *, runner: Runner = run_command) -> JobStatus | None:
    """``scontrol show job``: restarts, exit code and reason of a job Slurm still holds, else None."""
    proc = query(["scontrol", "show", "job", job_id], runner)
    if proc.returncode != 0:
        return None
    return parse_show_job(job_id, proc.stdout)


def job_status(job_ids: Sequence[str], *, runner: Runner = run_command, details: bool = True,
               raw_ids: Mapping[str, str] | None = None) -> dict[str, JobStatus]:
    """The best-known status of each job, with as few calls as possible.

    One batched squeue for all jobs (live and recently finished); then, for jobs that are finished
    or unknown to squeue, one batched ``sacct`` (accounting) or else ``sacct --completion`` (the job
    completion log) for their final state and exit code. The completion log files array elements
    under their raw job id: ``raw_ids`` (element id -> raw id, from the element folders) maps them
    back, with one more batched call. With ``details``, a single job squeue still holds also gets
    ``scontrol show job`` (restart count, exit code). An empty answer means ``UNKNOWN``, never "gone".
    """
    ids = list(dict.fromkeys(job_ids))
    found = squeue(ids, runner=runner) if ids else {}
    statuses: dict[str, JobStatus | None] = {i: found.get(i) for i in ids}
    settled = [i for i, s in statuses.items() if s is None or s.terminal]
    if settled:
        final = sacct(settled, runner=runner)
        if final is None:
            final = jobcomp(settled, runner=runner)
            raw = {i: (raw_ids or {})[i] for i in settled if i not in final and i in (raw_ids or {})}
            if raw:
                by_raw = jobcomp(sorted(set(raw.values())), runner=runner)
                final.update({i: replace(by_raw[r], job_id=i) for i, r in raw.items() if r in by_raw})
        # accounting and the completion log have no restart count: keep squeue's while it still knows the job
        statuses.update({i: _with_restarts(final[i], statuses[i]) for i in settled if i in final})
        _exit_codes_from_scontrol([i for i in settled if i not in final], statuses, runner)
    only = statuses[ids[0]] if len(ids) == 1 else None
    if details and only is not None and only.source == "squeue":
        try:
            statuses[ids[0]] = show_job(ids[0], runner=runner) or only
        except SlurmError as exc:  # the details are a bonus; squeue's answer stands
            log.debug("scontrol show job %s: %s", ids[0], exc.message)
    return {i: s or JobStatus(job_id=i, state="UNKNOWN", source="none") for i, s in statuses.items()}


# Finished jobs whose exit code only scontrol can give, asked one by one: at most this many per call.
MAX_SCONTROL_EXIT_CODES = 32


def _exit_codes_from_scontrol(ids: Sequence[str], statuses: dict[str, JobStatus | None], runner: Runner) -> None:
    """A job squeue lists as finished has no exit code there; without accounting the completion log gives it,
    but ``sacct --completion`` opens that file for writing, so an ordinary user gets "Permission denied"
    where only root (or SlurmUser) may write it. ``scontrol show job`` has it while the controller still
    holds the job (MinJobAge): ask it for those, a bounded number per call (the rest keep squeue's answer)."""
    missing = [i for i in ids if (s := statuses[i]) is not None and s.terminal and s.exit_code is None]
    for job_id in missing[:MAX_SCONTROL_EXIT_CODES]:
        try:
            shown = show_job(job_id, runner=runner)
        except SlurmError as exc:
            log.debug("scontrol show job %s: %s", job_id, exc.message)
            return
        if shown is not None and shown.terminal:
            statuses[job_id] = shown


def _with_restarts(final: JobStatus, live: JobStatus | None) -> JobStatus:
    return final if final.restarts is not None or live is None else replace(final, restarts=live.restarts)
