"""``orch logs JOBID|DIR [--batch | --rank R | --all-ranks] [-f] [--lines N]``: a job's logs.

By default rank 0's output with the batch script's own lines around it; ``--batch`` the batch log
alone, ``--rank R`` one rank's log, ``--all-ranks`` every rank's lines with a ``[rank R]`` prefix
(:mod:`orchestrator.records.logs.view` reads them, from the end: the last ``--lines`` lines of each).
The logs live in the job folder (``logs/slurm-<id>.out`` for the batch step, ``logs/<id>-rank<R>.out``
per rank; ``logs/local-rank<R>.out`` for ``orch run``); a job id is found in the user's index of
submitted jobs first, so the submit's ``--cluster`` is not needed. ``-f`` follows the files until the
job ends, across a requeue (the logs are opened in append mode). When the ranks' outcome records show
a failure, a last note (on stderr) names the rank to look at and why
(:func:`orchestrator.slurm.jobstate.failure`: under Slurm with srun's report or attempts.json's verdict,
and the rank's node), with the last lines of that rank's log. When Slurm's
job of this id is another job (the id was reused), following stops at once and a note says so.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from orchestrator.commands._common import add_cluster_argument, scope
from orchestrator.errors import ConfigError, OrchError, SlurmError
from orchestrator.records.jobdirs import JobDir
from orchestrator.records.logs.view import View, rank_logs, tail_lines
from orchestrator.records.training import progress_cells, read_progress, read_result
from orchestrator.service.jobs import chosen_cluster_name, locate
from orchestrator.slurm import client as slurm
from orchestrator.slurm import jobstate
from orchestrator.spec.bounds import BOUNDS
from orchestrator.spec.runconfig import LOG_DIR
from orchestrator.task.hang import for_terminal

STATE_EVERY = 2.0  # seconds between job state checks while following
TAIL_LINES = 20
ALL_SHOWN = -1  # blame_note's ``shown`` when every rank's log was shown  # of the rank to look at, below the log shown


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", metavar="JOBID|DIR", help="Slurm job id or job folder")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--batch", action="store_true", help="only the batch script's log")
    which.add_argument("--rank", type=int, metavar="R", help="only rank R's log")
    which.add_argument("--all-ranks", action="store_true",
                       help="every rank's log, each line prefixed with [rank R]")
    parser.add_argument("-n", "--lines", type=int, default=1000, metavar="N",
                        help="show the last N lines of each log (default 1000)")
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
    note = f"orch: look at rank {rank}: {found.message}" + (f" (rank {rank} ran on {found.node})" if found.node else "")
    if shown in (rank, ALL_SHOWN):
        return note
    try:
        path = job.log_file(rank)
    except OrchError:
        return note
    last, _, _ = tail_lines(path, TAIL_LINES * 10, max_bytes=1 << 20)
    if not last:
        return note
    # as orch run shows a stuck rank: its stack without orch's launcher frames, so the script's own are in view
    kept = for_terminal(b"".join(last).decode("utf-8", errors="replace")).rstrip("\n").splitlines()
    lines = "\n".join(kept[-TAIL_LINES:])
    ref = job.job_id or job.path
    return note + f"\n--- last lines of {path} (orch logs {ref} --rank {rank}) ---\n" + lines + "\n---"


def _missing(job: JobDir, path: Path, rank: int | None, ended: bool = False) -> OrchError:
    ranks = sorted(p.name for p in rank_logs(job).values())
    if rank is not None and ranks:
        return OrchError(f"no log for rank {rank}: {path} does not exist",
                         hint=f"rank logs in {job.path / LOG_DIR}: {', '.join(ranks)}")
    if ended:
        return OrchError(f"{path} does not exist: the {'job' if job.mode == 'slurm' else 'run'} ended without it",
                         hint=f"orch status {job.job_id or job.path} says how it ended")
    when = "when the job starts" if job.mode == "slurm" else "when the run starts"
    return OrchError(f"{path} does not exist yet",
                     hint=f"Slurm creates it {when} (orch status {job.job_id or job.path})")


def _ended(job: JobDir, cluster: str | None) -> bool:
    """Has the run finished? Slurm jobs: squeue says terminal, no longer knows the job, or knows
    another job under its id."""
    if job.mode != "slurm" or job.job_id is None:
        return read_result(job.path) is not None
    try:
        found = slurm.squeue([job.job_id]).get(job.job_id)
    except SlurmError:
        return False  # a slow controller is no reason to stop following
    if jobstate.reused(job, found, cluster) is not None:
        print(f"orch: job id {job.job_id} was reused: Slurm's job {job.job_id} is not this folder's job "
              "(it has ended)", file=sys.stderr)
        return True
    return found is None or found.terminal


def make_view(args: argparse.Namespace, job: JobDir) -> View:
    if args.lines < 0:
        raise OrchError(f"--lines {args.lines} must be 0 or more", hint="e.g. --lines 200")
    if args.rank is not None and args.rank < 0:
        raise OrchError(f"--rank {args.rank} must be 0 or more", hint="ranks count from 0")
    mode = "batch" if args.batch else "rank" if args.rank is not None else "all" if args.all_ranks else "default"
    if job.mode == "local" and mode == "batch":
        raise OrchError(f"{job.path} is a local run (orch run): it has no batch log",
                        hint=f"orch logs {job.path} shows rank 0's log; --rank R or --all-ranks the others")
    if job.mode == "slurm":
        job.queued_id()  # a folder sbatch refused: say why
    return View(job=job, mode=mode, rank=args.rank, lines=args.lines)


def check_interval(interval: float) -> None:
    """``--interval``: finite, no busy loop, no endless sleep (orchestrator.spec.bounds)."""
    problem = BOUNDS["interval"].problem(interval)
    if problem is not None:
        raise ConfigError(f"--interval {interval} {problem}", hint="e.g. --interval 0.5 (the default) or --interval 5")


def run(args: argparse.Namespace) -> int:
    check_interval(args.interval)  # before looking for the job: bad input is refused first
    found = locate(args.job, scope(args))
    job = found.job
    view = make_view(args, job)
    if found.followed is not None:  # the id asked for ran before the folder's job: say so, show the job now
        print(f"orch: job {found.followed}: the logs of job {job.job_id} follow (job {args.job}'s own are "
              f"{job.path / LOG_DIR}/slurm-{args.job}.out and {args.job}-rank<R>.out)", file=sys.stderr)
    out = sys.stdout.buffer
    sources = [s for s in view.sources() if s.path.is_file()]
    shown_rank = {"batch": None, "all": ALL_SHOWN}.get(view.mode, view.rank or 0)
    if not sources and not args.follow:
        note = progress_note(job)
        if note is not None:
            print(note, file=sys.stderr)
        raise missing_error(view, ended=_finished(job, chosen_cluster_name(scope(args))))
    sources, written = view.show(out, following=args.follow)
    _print_notes(view)
    if args.follow:
        if not any(s.path.is_file() for s in sources) and view.mode != "all":
            print(f"orch: waiting for {sources[-1].path} (the job has not started yet)", file=sys.stderr)
        cluster = chosen_cluster_name(scope(args))
        with contextlib.suppress(KeyboardInterrupt):
            view.follow(sources, out, lambda: _ended(job, cluster), interval=args.interval, check_every=STATE_EVERY)
        if not any(s.path.is_file() for s in view.sources()):
            raise missing_error(view)
    elif written == 0 or (view.mode == "default" and not view.rank_path(0).is_file()):
        _print_nothing(view, written, _finished(job, chosen_cluster_name(scope(args))))
    _print_blame(job, shown_rank)
    return 0


def missing_error(view: View, *, ended: bool = False) -> OrchError:
    """No log to show; ``ended``: the job is over, so none will come (else: not yet)."""
    status = f"orch status {view.job.job_id or view.job.path}"
    if view.mode == "all":
        if ended:
            return OrchError(f"no rank logs in {view.job.path / LOG_DIR}: the job ended before any rank wrote one",
                             hint=f"the batch log may say why: orch logs {view.job.job_id or view.job.path} --batch")
        return OrchError(f"no rank logs in {view.job.path / LOG_DIR} yet",
                         hint=f"the ranks create them when the job starts ({status})")
    if view.mode == "rank":
        return _missing(view.job, view.rank_path(view.rank or 0), view.rank, ended)
    path = view.batch_path() if view.mode == "batch" else view.rank_path(0)
    return _missing(view.job, path or view.rank_path(0), None, ended)


# what an empty log says, by view: (while the job runs, once it has ended)
EMPTY_WORDS: dict[str, tuple[str, str]] = {
    "batch": ("the batch shell has written nothing yet", "the batch shell wrote nothing (its log is empty)"),
    "rank": ("rank {rank} has written nothing yet", "rank {rank} wrote nothing (its log is empty)"),
    "all": ("the ranks have written nothing yet", "the ranks wrote nothing (their logs are empty)"),
    "default": ("rank 0 has written nothing yet", "rank 0 wrote nothing (its log is empty)"),
}


def _empty_words(view: View, ended: bool) -> str:
    running, done = EMPTY_WORDS.get(view.mode, EMPTY_WORDS["default"])
    return (done if ended else running).format(rank=view.rank)


def _finished(job: JobDir, cluster: str | None) -> bool:
    """Has the job ended (the tense of a note on an empty or absent log)? A local run: its records say; a Slurm
    job: squeue says terminal, or no longer knows it, or knows another job under its id. Not known: no."""
    if job.mode != "slurm" or job.job_id is None:
        return bool(jobstate.describe(None, job, None)["terminal"])
    try:
        found = slurm.squeue([job.job_id]).get(job.job_id)
    except SlurmError:
        return False
    return found is None or found.terminal or jobstate.reused(job, found, cluster) is not None


def _print_nothing(view: View, written: int, ended: bool) -> None:
    """The notes on a log that showed nothing, and on rank 0's absent log (with the batch log's lines), in
    the tense of the job: ``ended`` (it wrote nothing), else running (nothing yet, and where training is)."""
    if written == 0:
        print(f"orch: {_empty_words(view, ended)}", file=sys.stderr)
        note = progress_note(view.job) if not ended else None
        if note is not None:
            print(note, file=sys.stderr)  # what is happening meanwhile
    if view.mode == "default" and not view.rank_path(0).is_file():
        print(f"orch: rank 0's log {view.rank_path(0)} does not exist{'' if ended else ' yet'}", file=sys.stderr)


def _print_notes(view: View) -> None:
    for note in view.notes:
        print(note, file=sys.stderr)


def _print_blame(job: JobDir, shown: int | None) -> None:
    note = blame_note(job, shown)
    if note is not None:
        sys.stdout.flush()
        print(note, file=sys.stderr, flush=True)
