"""``orch list [--json]``: the jobs submitted from here, from their folders under ``launcher.job_root``.

The state is ``orch status``'s (:mod:`orchestrator.slurm.jobstate`: one batched squeue, sacct or the job
completion log for finished jobs, then the folder: ``NOT_QUEUED`` when sbatch refused a job,
``COMPLETED`` when Slurm forgot it but its result.json exists). Without Slurm the folders still list.
A folder whose job id Slurm now gives to another job (ids restart; two clusters may share one job
root) shows its own records, with REASON "job id reused".
Array elements are listed as jobs of their own (``<array id>_<index>``).

Bounded for any number of folders: by default the :data:`DEFAULT_LIMIT` newest jobs are shown (a
``#`` line under the table says when there are more; ``--limit 0`` lists all). Only the folders
shown are read (their names give the order), and Slurm is asked about their ids in batches
(:func:`orchestrator.slurm.client.id_batches`), never on one unbounded command line.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from typing import Any

from orchestrator.commands._common import add_cluster_argument, add_json_argument, print_json, scope
from orchestrator.commands._tables import format_rows
from orchestrator.records import jobdirs
from orchestrator.remote.forward import remote_rows
from orchestrator.service.jobs import cluster_name, job_root_of, reconciled
from orchestrator.slurm import jobstate

COLUMNS: dict[str, str] = {"NAME": "name", "JOBID": "job_id", "CREATED": "created", "STATE": "state",
                           "RESTARTS": "restarts", "ELAPSED": "elapsed", "REASON": "reason", "FOLDER": "job_dir"}


DEFAULT_LIMIT = 200  # jobs shown without --limit: about 200 folders read, whatever the root holds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="N",
                        help=f"show only the N newest jobs (default {DEFAULT_LIMIT}; 0: all of them)")
    add_cluster_argument(parser)
    add_json_argument(parser)


def list_table(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[jobdirs.JobDir], bool]:
    """The rows of the ``args.limit`` newest job folders of the job root, their folders, and whether
    there are more (``--limit 0``: all)."""
    newest = jobdirs.iter_job_paths(job_root_of(scope(args)))  # newest first, by name: nothing read yet
    limit = min(args.limit, sys.maxsize - 1)  # a 20-digit --limit means "all" (islice takes no more)
    paths = list(itertools.islice(newest, limit + 1) if limit > 0 else newest)
    more = limit > 0 and len(paths) > limit
    jobs = reconciled([jobdirs.read_job_dir(path) for path in (paths[:limit] if more else paths)])  # shown only
    table = jobstate.rows([(job.job_id, job) for job in jobs], tolerant=True, details=False,
                          cluster=cluster_name(scope(args)))
    return table, jobs, more


def run(args: argparse.Namespace) -> int:
    table, _, more = list_table(args)
    limit = min(args.limit, sys.maxsize - 1)
    table += remote_rows(limit)  # jobs submitted from here to remote clusters (docs/remote.md)
    if args.json:
        print_json(table)
    elif table:
        print(format_rows(table, COLUMNS))
        if more:
            print(f"# the {limit} newest jobs; more job folders are under {job_root_of(scope(args))} "
                  "(--limit N shows more, --limit 0 all)")
    return 0
