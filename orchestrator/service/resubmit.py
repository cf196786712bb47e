"""Submit a sweep's failed and timed-out elements again (``orch resubmit SWEEP --failed``): the sweep folder a
reference names, the plan of which elements go (:func:`orchestrator.slurm.rerun.plan_rerun`) and its queueing
(:func:`orchestrator.slurm.rerun.rerun`). A job that is not a sweep is refused."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.errors import ConfigError
from orchestrator.records.jobdirs import is_job_id
from orchestrator.records.sweeps import find_sweep, is_sweep, sweep_of
from orchestrator.service.jobs import Scope, cluster_name, find_job, job_root_of
from orchestrator.spec.numbers import check_path

if TYPE_CHECKING:
    from orchestrator.slurm.rerun import Rerun

NOT_A_SWEEP_HINT = ("orch resubmit takes a sweep (orch submit --sweep: a job array); a single job continues from "
                    "its checkpoint when launcher.requeue is on, or locally with orch run --resume DIR")


def sweep_folder(ref: str, scope: Scope) -> Path:
    """The sweep folder ``ref`` names: the folder, an array id, an element's id or folder."""
    path = Path(check_path(ref, "SWEEP")).expanduser()
    if is_sweep(path):
        return path.resolve()
    if is_job_id(ref) and "_" not in ref:
        found = find_sweep(job_root_of(scope), ref)
        if found is not None:
            return found
    job = find_job(ref, scope)  # a job folder or id: an element's, or a single job's
    folder = sweep_of(job.path)
    if folder is None:
        raise ConfigError(f"job {job.job_id or job.path} is not a sweep: its folder {job.path} is a job of its own",
                          hint=NOT_A_SWEEP_HINT)
    return folder


def plan(ref: str, scope: Scope) -> Rerun:
    """Which elements of the sweep ``ref`` names would be submitted again (failed or timed out), as what array."""
    from orchestrator.slurm.rerun import plan_rerun

    return plan_rerun(sweep_folder(ref, scope), cluster=cluster_name(scope))


def resubmit(planned: Rerun) -> Rerun:
    """Queue ``planned`` (one new job array over its elements' indices, recorded in the sweep's folder): the plan
    with the new array's job id."""
    from orchestrator.slurm.rerun import rerun

    return rerun(planned)
