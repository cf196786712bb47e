"""``orch list [--json]``: the jobs submitted from here, from their folders under ``launcher.job_root``.

The state is ``orch status``'s (:mod:`orchestrator.slurm.jobstate`: one batched squeue, sacct or the job
completion log for finished jobs, then the folder: ``NOT_QUEUED`` when sbatch refused a job,
``COMPLETED`` when Slurm forgot it but its result.json exists). Without Slurm the folders still list.
A folder whose job id Slurm now gives to another job (ids restart; two clusters may share one job
root) shows its own records, with REASON "job id reused".
Array elements are listed as jobs of their own (``<array id>_<index>``).
"""

from __future__ import annotations

import argparse
import itertools

from orchestrator.commands._common import add_cluster_argument, add_json_argument, print_json
from orchestrator.commands._jobs import cluster_name, format_rows, job_root_from_args
from orchestrator.records.jobdirs import iter_job_dirs
from orchestrator.slurm import jobstate

COLUMNS: dict[str, str] = {"NAME": "name", "JOBID": "job_id", "CREATED": "created", "STATE": "state",
                           "RESTARTS": "restarts", "ELAPSED": "elapsed", "REASON": "reason", "FOLDER": "job_dir"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, default=0, metavar="N", help="show only the N newest jobs")
    add_cluster_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    newest = iter_job_dirs(job_root_from_args(args))  # newest first, read lazily
    jobs = list(itertools.islice(newest, args.limit) if args.limit > 0 else newest)
    table = jobstate.rows([(job.job_id, job) for job in jobs], tolerant=True, details=False,
                          cluster=cluster_name(args))
    if args.json:
        print_json(table)
    elif table:
        print(format_rows(table, COLUMNS))
    return 0
