"""``orch logs JOBID|DIR [--batch | --rank R | --all-ranks] [-f] [--lines N]``: a job's logs.

By default rank 0's output with the batch script's own lines around it; ``--batch`` the batch log
alone, ``--rank R`` one rank's log, ``--all-ranks`` every rank's lines with a ``[rank R]`` prefix
(the last ``--lines`` lines of each). Which logs, the notes beside them and the errors for a log that
is not there are :mod:`orchestrator.service.logs`'s; this module writes them (the logs on stdout, the
notes on stderr). ``-f`` follows the files until the job ends, across a requeue (the logs are opened in
append mode). When the ranks' outcome records show a failure, a last note (on stderr) names the rank to
look at and why, with the last lines of that rank's log. When Slurm's job of this id is another job
(the id was reused), following stops at once and a note says so.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable

from orchestrator.commands._common import add_cluster_argument, scope
from orchestrator.service.logs import (
    Logs,
    blame_note,
    check_interval,
    finished,
    follow_ended,
    missing_error,
    nothing_notes,
    open_logs,
    progress_note,
)
from orchestrator.spec.runconfig import LOG_DIR

STATE_EVERY = 2.0  # seconds between job state checks while following


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


def run(args: argparse.Namespace) -> int:
    check_interval(args.interval)  # before looking for the job: bad input is refused first
    logs = open_logs(args.job, scope(args), batch=args.batch, rank=args.rank, all_ranks=args.all_ranks,
                     lines=args.lines)
    job, view = logs.job, logs.view
    if logs.followed is not None:  # the id asked for ran before the folder's job: say so, show the job now
        print(f"orch: job {logs.followed}: the logs of job {job.job_id} follow (job {args.job}'s own are "
              f"{job.path / LOG_DIR}/slurm-{args.job}.out and {args.job}-rank<R>.out)", file=sys.stderr)
    out = sys.stdout.buffer
    if not logs.present() and not args.follow:
        note = progress_note(job)
        if note is not None:
            print(note, file=sys.stderr)
        raise missing_error(view, ended=finished(job, logs.cluster()))
    sources, written = view.show(out, following=args.follow)
    _print_notes(view.notes)
    if args.follow:
        if not any(s.path.is_file() for s in sources) and view.mode != "all":
            print(f"orch: waiting for {sources[-1].path} (the job has not started yet)", file=sys.stderr)
        with contextlib.suppress(KeyboardInterrupt):
            view.follow(sources, out, _ended_check(logs), interval=args.interval, check_every=STATE_EVERY)
        if not logs.present():
            raise missing_error(view)
    elif written == 0 or (view.mode == "default" and not view.rank_path(0).is_file()):
        _print_notes(nothing_notes(view, written, finished(job, logs.cluster())))
    _print_blame(logs)
    return 0


def _ended_check(logs: Logs) -> Callable[[], bool]:
    """Following stops when the job has ended; a reused id is said on stderr."""
    cluster = logs.cluster()

    def check() -> bool:
        done, note = follow_ended(logs.job, cluster)
        if note is not None:
            print(note, file=sys.stderr)
        return done

    return check


def _print_notes(notes: list[str]) -> None:
    for note in notes:
        print(note, file=sys.stderr)


def _print_blame(logs: Logs) -> None:
    note = blame_note(logs.job, logs.shown_rank())
    if note is not None:
        sys.stdout.flush()
        print(note, file=sys.stderr, flush=True)
