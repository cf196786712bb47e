"""``orch list [--json]``: the jobs submitted from here, from their folders under ``launcher.job_root``.

The rows are :func:`orchestrator.service.joblist.list_table`'s (the state as ``orch status`` reads it; without
Slurm the folders still list), then the jobs submitted from here to remote clusters (docs/remote.md); this
module prints them. Array elements are listed as jobs of their own (``<array id>_<index>``).

Bounded for any number of folders: by default the :data:`DEFAULT_LIMIT` newest jobs are shown (a
``#`` line under the table says when there are more; ``--limit 0`` lists all).
"""

from __future__ import annotations

import argparse

from orchestrator.commands._common import add_cluster_argument, add_json_argument, print_json, scope
from orchestrator.commands._tables import format_rows
from orchestrator.service.joblist import list_table, remote_rows
from orchestrator.service.jobs import job_root_of

COLUMNS: dict[str, str] = {"NAME": "name", "JOBID": "job_id", "CREATED": "created", "STATE": "state",
                           "RESTARTS": "restarts", "ELAPSED": "elapsed", "REASON": "reason", "FOLDER": "job_dir"}


DEFAULT_LIMIT = 200  # jobs shown without --limit: about 200 folders read, whatever the root holds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="N",
                        help=f"show only the N newest jobs (default {DEFAULT_LIMIT}; 0: all of them)")
    add_cluster_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    listed = list_table(scope(args), args.limit)
    table = listed.rows + remote_rows(listed.limit)  # jobs submitted from here to remote clusters (docs/remote.md)
    if args.json:
        print_json(table)
    elif table:
        print(format_rows(table, COLUMNS))
        if listed.more:
            print(f"# the {listed.limit} newest jobs; more job folders are under {job_root_of(scope(args))} "
                  "(--limit N shows more, --limit 0 all)")
    return 0
