"""``orch top``: a full-screen, live view of the jobs submitted from here (docs/cli.md, "orch top").

One row per job folder under ``launcher.job_root`` (``orch list``'s, newest first, ``--limit``), and the jobs
submitted to remote clusters (from the index); what ``orch status`` says of each, refreshed every
``--interval`` seconds reading only what changed (:mod:`orchestrator.service.board`), Slurm asked at most every
``--slurm-interval`` seconds in one batched call. Keys: ``c`` cancels the selected job and ``r`` sends it the
checkpoint-and-requeue signal (its ``launcher.preempt_signal``), both through ``orch cancel``'s code path
(:func:`orchestrator.service.cancel.cancel`) after a y/N question.

The terminal UI is textual, the ``tui`` extra, imported here only when the command runs (never at the CLI's
start-up). Without a terminal, or without textual, it says so and exits non-zero.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from orchestrator.commands._common import add_cluster_argument, scope
from orchestrator.errors import OrchError
from orchestrator.service.board import DEFAULT_LIMIT, SLURM_EVERY_S, Board, JobRow
from orchestrator.service.cancel import cancel, unknown_error
from orchestrator.service.jobs import cluster_name, job_root_of

if TYPE_CHECKING:
    from orchestrator.views.topapp import TopApp

INSTALL_HINT = "pip install 'orch[tui]' (textual); orch list and orch status --json show the same jobs without it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="N",
                        help=f"show the N newest jobs (default {DEFAULT_LIMIT}; 0: all of them)")
    parser.add_argument("--interval", type=float, default=0.5, metavar="S",
                        help="seconds between refreshes of the job folders (default 0.5)")
    parser.add_argument("--slurm-interval", type=float, default=SLURM_EVERY_S, metavar="S",
                        help="seconds between Slurm queries, one batched call for all jobs "
                             f"(default {SLURM_EVERY_S:g})")
    add_cluster_argument(parser)


def run(args: argparse.Namespace) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise OrchError("orch top needs a terminal: its input or output is not one",
                        hint="orch list and orch status --json print the same jobs to a pipe or a file")
    for name, value in (("--interval", args.interval), ("--slurm-interval", args.slurm_interval)):
        if not 0.05 <= value <= 3600:
            raise OrchError(f"{name} {value:g} is out of range", hint=f"{name} takes seconds from 0.05 to 3600")
    app(args).run()
    return 0


def app(args: argparse.Namespace) -> TopApp:
    """The app over the job root of ``args`` (its tests drive this one, with textual's pilot)."""
    try:
        from orchestrator.views.topapp import Actions, TopApp
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != "textual":
            raise
        raise OrchError("orch top needs the textual package, which is not installed", hint=INSTALL_HINT) from None
    board = Board(job_root_of(scope(args)), cluster=cluster_name(scope(args)), limit=max(0, args.limit),
                  slurm_every=args.slurm_interval)
    return TopApp(board, Actions(cancel=lambda row: act(args, row, None),
                                 requeue=lambda row: act(args, row, row.preempt_signal or "USR2")),
                  interval=args.interval)


def act(args: argparse.Namespace, row: JobRow, signal: str | None) -> str:
    """Cancel (``signal``: signal) the job of ``row`` as ``orch cancel`` does; what was done, as a line."""
    what = f"--signal {signal} " if signal else ""
    if row.mode == "remote":
        raise OrchError(f"job {row.job_id} runs on a remote cluster",
                        hint=f"orch cancel {what}{row.job_id} with that cluster's --cluster ({row.reason})")
    if row.mode == "local":
        raise OrchError("a local run (orch run) is no Slurm job",
                        hint="stop it in the terminal of its orch run (Ctrl-C); its preemption signal "
                             f"{row.preempt_signal or 'USR2'} to orch run checkpoints it, orch run --resume continues")
    done = cancel([str(row.job_dir)], scope(args), signal)
    if done["unknown"]:
        raise unknown_error(done["unknown"])
    acted = ", ".join(done["acted"])
    if acted:
        return f"signalled {acted} ({signal}): it checkpoints and requeues" if signal else f"cancelled {acted}"
    return "; ".join(f"{i} had already ended ({s})" for i, s in done["finished"].items())
