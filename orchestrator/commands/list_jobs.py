"""``orch list [--json]``: the jobs submitted from here, from their folders under ``launcher.job_root``.

The state comes from one ``squeue`` call for the jobs Slurm still holds; older jobs show what
their folder says (``not queued`` when sbatch refused them, ``finished`` when result.json exists).
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from orchestrator import slurm
from orchestrator.commands._common import add_cluster_argument, add_json_argument, print_json
from orchestrator.commands._jobs import format_rows, job_root_from_args
from orchestrator.errors import SlurmError
from orchestrator.jobdirs import JobDir, list_job_dirs, read_result

log = logging.getLogger(__name__)

HELP = "list the jobs submitted from here (from their job folders)"
COLUMNS: dict[str, str] = {"NAME": "name", "JOBID": "job_id", "CREATED": "created", "STATE": "state",
                           "FOLDER": "job_dir"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, default=0, metavar="N", help="show only the N newest jobs")
    add_cluster_argument(parser)
    add_json_argument(parser)


def _live_states(jobs: list[JobDir]) -> dict[str, slurm.JobStatus]:
    ids = [j.job_id for j in jobs if j.job_id]
    if not ids:
        return {}
    try:
        return slurm.squeue(ids)
    except SlurmError as exc:  # no Slurm here (local runs only) or a slow controller: folders still list
        log.info("no job states: %s", exc.message)
        return {}


def describe(job: JobDir, live: dict[str, slurm.JobStatus]) -> dict[str, Any]:
    """One row: Slurm's state name when squeue knows the job, else what the folder tells."""
    known = live.get(job.job_id) if job.job_id else None
    if known is not None:
        state, orch_state = known.state, known.orch_state
    elif job.job_id is None and job.submit_error is not None:
        state, orch_state = None, "not queued"
    elif read_result(job.path) is not None:
        state, orch_state = None, "finished"
    else:
        state, orch_state = None, "unknown"
    return {"name": job.name, "job_id": job.job_id, "mode": job.mode, "created": job.created,
            "state": state or orch_state, "slurm_state": state, "orch_state": orch_state,
            "job_dir": str(job.path)}


def run(args: argparse.Namespace) -> int:
    jobs = list_job_dirs(job_root_from_args(args))
    if args.limit > 0:
        jobs = jobs[: args.limit]
    live = _live_states(jobs)
    table = [describe(job, live) for job in jobs]
    if args.json:
        print_json(table)
    elif table:
        print(format_rows(table, COLUMNS))
    return 0
