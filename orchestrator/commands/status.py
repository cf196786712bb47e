"""``orch status [JOBID|DIR ...] [--json]``: Slurm's state of jobs, live or finished.

The rows are :func:`orchestrator.service.status.status_table`'s (which jobs, and each row's columns); this
module prints them. Without arguments: the newest jobs submitted from here (their folders under
``launcher.job_root``), a submit killed after sbatch included. With ``--json`` one job gives one object, several
give a list; each has at least ``job_id`` and ``state`` (Slurm's name, e.g. ``COMPLETED``), ``elapsed``
(``[D-]HH:MM:SS``) and ``gpu_hours``. EPOCH/STEP/LOSS (and, while it runs, SAMPLES/S and ETA) come from the
job folder's ``progress.json`` (``progress`` in ``--json``); METRICS is the last epoch's loss and task metrics
(``last_epoch``). When the ranks' outcome records show a failure, ``failure`` (``--json``; a ``# job ...`` line
below the table) names the rank to look at and, under Slurm, its node. One job named: its code snapshot,
working directory, start-up phases, attempts and goodput ledger follow the table as ``#`` lines.
"""

from __future__ import annotations

import argparse
from typing import Any

from orchestrator.commands._common import add_cluster_argument, add_json_argument, print_json, scope
from orchestrator.commands._tables import format_rows, shown_columns
from orchestrator.service.jobs import job_root_of
from orchestrator.service.status import REUSED, attempt_lines, startup_text, status_table

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


def run(args: argparse.Namespace) -> int:
    found = status_table(args.jobs, scope(args), args.limit)
    table, one = found.rows, found.one
    if not table:
        if args.json:
            print_json([])
            return 0
        # nothing of this user's yet (a new user on a shared job root, too): said, not an error
        print(f"# no jobs of yours under {job_root_of(scope(args))} yet (a job id, or the --cluster whose "
              "launcher.job_root holds your job folders, shows others)")
        return 0
    startup, workdir = table[0].get("startup"), table[0].get("workdir")
    snap = found.snapshot
    if args.json:
        print_json(table[0] if one else table)
    else:
        print(format_rows(table, shown_columns(table, COLUMNS)))
        for row in table:  # orch submit --preflight=exclude: the nodes a preflight took out
            row_job = row["job_id"] or row["job_dir"]  # a local run: its folder
            if row.get("followed"):
                print(f"# job {row['followed']}: shown as job {row['job_id']}")
            if row.get("reused"):
                print(f"# job {row['job_id']}: {REUSED}: {row['reused']}; shown from its folder's records")
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
            print(startup_text(startup))
        if one:
            _print_attempts(table[0])
    return 0


def _print_attempts(row: dict[str, Any]) -> None:
    """orch status JOB: each attempt (attempts.json) and where the time went (result.json's goodput)."""
    for line in attempt_lines(row):
        print(f"# {line}")
