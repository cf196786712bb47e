"""``orch logs JOBID|DIR [--rank R] [-f]``: print a job's batch log or one rank's log.

The logs live in the job folder (``logs/slurm-<id>.out`` for the batch step, ``logs/<id>-rank<R>.out``
per rank; ``logs/local-rank<R>.out`` for ``orch run``). ``-f`` follows the file until the job ends,
across a requeue (the logs are opened in append mode). When the ranks' outcome records show a
failure, a last note (on stderr) names the rank to look at and why (:func:`orchestrator.slurm.jobstate.failure`),
with the last lines of that rank's log.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path
from typing import BinaryIO

from orchestrator.commands._common import add_cluster_argument
from orchestrator.commands._jobs import job_root_from_args
from orchestrator.errors import OrchError, SlurmError
from orchestrator.records.jobdirs import JobDir, find_job_dir, progress_cells, read_progress, read_result
from orchestrator.slurm import client as slurm
from orchestrator.slurm import jobstate
from orchestrator.spec.runconfig import LOG_DIR

STATE_EVERY = 2.0  # seconds between job state checks while following
TAIL_LINES = 20  # of the rank to look at, below the log shown


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", metavar="JOBID|DIR", help="Slurm job id or job folder")
    parser.add_argument("--rank", type=int, metavar="R", help="show rank R's log instead of the batch log")
    parser.add_argument("-f", "--follow", action="store_true",
                        help="keep printing new lines until the job ends")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between reads when following")
    add_cluster_argument(parser)


def progress_note(job: JobDir) -> str | None:
    """What rank 0 last reported in progress.json, as a line (when the log says nothing yet)."""
    cells = progress_cells(read_progress(job.path))
    if cells["epoch"] is None:
        return None
    return (f"orch: rank 0 is at epoch {cells['epoch']}, step {cells['step']}, loss {cells['loss'] or '-'} "
            f"(from {job.path / 'progress.json'})")


def blame_note(job: JobDir, shown: int | None) -> str | None:
    """Which rank to look at, and why, when the outcome records show a failure; with the last lines
    of that rank's log unless it is the log just shown."""
    found = jobstate.failure(job)
    if found is None or not found.ranks:
        return None
    rank = found.ranks[0]
    note = f"orch: look at rank {rank}: {found.message}"
    if shown == rank:
        return note
    try:
        path = job.log_file(rank)
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[-TAIL_LINES:]
    except (OrchError, OSError):
        return note
    ref = job.job_id or job.path
    return note + f"\n--- last lines of {path} (orch logs {ref} --rank {rank}) ---\n" + "\n".join(lines) + "\n---"


def _missing(job: JobDir, path: Path, rank: int | None) -> OrchError:
    ranks = sorted(p.name for p in (job.path / LOG_DIR).glob("*rank*.out"))
    if rank is not None and ranks:
        return OrchError(f"no log for rank {rank}: {path} does not exist",
                         hint=f"rank logs in {job.path / LOG_DIR}: {', '.join(ranks)}")
    when = "when the job starts" if job.mode == "slurm" else "when the run starts"
    return OrchError(f"{path} does not exist yet",
                     hint=f"Slurm creates it {when} (orch status {job.job_id or job.path})")


def _copy_new(path: Path, offset: int, out: BinaryIO) -> int:
    """Write what was appended to ``path`` since ``offset``; returns the new offset."""
    try:
        with path.open("rb") as handle:
            size = path.stat().st_size
            if size < offset:  # truncated: start again
                offset = 0
            handle.seek(offset)
            data = handle.read()
    except FileNotFoundError:
        return offset
    if data:
        out.write(data)
        out.flush()
    return offset + len(data)


def _ended(job: JobDir) -> bool:
    """Has the run finished? Slurm jobs: squeue says terminal or no longer knows the job."""
    if job.mode != "slurm" or job.job_id is None:
        return read_result(job.path) is not None
    try:
        found = slurm.squeue([job.job_id]).get(job.job_id)
    except SlurmError:
        return False  # a slow controller is no reason to stop following
    return found is None or found.terminal


def follow(job: JobDir, path: Path, interval: float, out: BinaryIO) -> bool:
    """Print the log as it grows until the job ends; False when the log never appeared."""
    offset = 0
    next_check = 0.0
    waiting_noted = False
    while True:
        offset = _copy_new(path, offset, out)
        if not path.exists() and not waiting_noted:
            print(f"orch: waiting for {path} (the job has not started yet)", file=sys.stderr)
            waiting_noted = True
        now = time.monotonic()
        if now >= next_check:
            next_check = now + STATE_EVERY
            if _ended(job):
                _copy_new(path, offset, out)  # what was written between the last read and the end
                return path.exists()
        time.sleep(interval)


def run(args: argparse.Namespace) -> int:
    job = find_job_dir(args.job, job_root_from_args(args))
    path = job.log_file(args.rank)
    out = sys.stdout.buffer
    if args.follow:
        appeared = True
        with contextlib.suppress(KeyboardInterrupt):
            appeared = follow(job, path, args.interval, out)
        if not appeared:
            raise _missing(job, path, args.rank)
        _print_blame(job, args.rank)
        return 0
    note = progress_note(job)
    if not path.is_file():
        if note is not None:
            print(note, file=sys.stderr)
        raise _missing(job, path, args.rank)
    if _copy_new(path, 0, out) == 0:
        who = "the batch shell" if args.rank is None else f"rank {args.rank}"
        print(f"orch: {path} is empty: {who} has written nothing yet", file=sys.stderr)
        if note is not None:
            print(note, file=sys.stderr)  # what is happening meanwhile
    _print_blame(job, args.rank)
    return 0


def _print_blame(job: JobDir, shown: int | None) -> None:
    note = blame_note(job, shown)
    if note is not None:
        sys.stdout.flush()
        print(note, file=sys.stderr, flush=True)
