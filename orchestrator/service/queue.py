"""Queue what :mod:`orchestrator.service.plan` planned: the second half of ``orch submit``, of
``orchestrator.submit()``/``sweep()`` and of ``orch mcp``'s submit tool.

:func:`queue` writes the job folder and sbatches the plan's script (the dry run's, byte for byte) through
:func:`orchestrator.slurm.submission.queue`; a sweep is planned as one job array (:func:`plan_sweep`) and
queued once (:func:`queue_sweep`). A refusal of sbatch raises SlurmError (its message is in the folder's
``submit_error.txt``); the caller says so. Nothing here prints.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.service.plan import Planned

if TYPE_CHECKING:
    from orchestrator.slurm.submission import ArrayPlan, Element

__all__ = ["ArrayPlan", "Element", "Queued", "QueuedArray", "check_pass_env", "plan_sweep", "queue", "queue_sweep",
           "sweep_grid"]


@dataclass(frozen=True)
class Queued:
    """A queued job: its id, its folder, orch's choice of resources and the bad nodes left out (one line each)."""

    job_id: str
    job_dir: Path
    resources: str | None = None
    left_out: tuple[str, ...] = ()


@dataclass(frozen=True)
class QueuedArray:
    """A queued sweep: the array's id and folder, and each element's id (in the array's order)."""

    array_id: str
    job_dir: Path
    ids: tuple[str, ...]
    elements: tuple[Element, ...]


def queue(planned: Planned, environ: Mapping[str, str] | None = None) -> Queued:
    """Queue one planned job (the data directory checked first); SlurmError when sbatch refuses."""
    from orchestrator.slurm.submission import queue as sbatch_plan

    planned.check_data()
    plan = planned.plan
    job_id = sbatch_plan(plan, os.environ if environ is None else environ)
    left_out = tuple(plan.left_out.lines()) if plan.left_out is not None else ()
    return Queued(job_id=job_id, job_dir=plan.job_dir, resources=plan.resources, left_out=left_out)


def sweep_grid(axes: Sequence[str]) -> list[dict[str, str]]:
    """``--sweep`` axes (``["lr=0.1,0.01", "batch_size=32,64"]``) -> the cartesian product, the last axis fastest."""
    from orchestrator.slurm.submission import parse_sweep

    return parse_sweep(axes)


def plan_sweep(planned: Planned, grid: Sequence[Mapping[str, Any]], *, throttle: int | None = None) -> ArrayPlan:
    """The sweep ``grid`` (each entry's overrides on top of the request's) as one job array (pure): every
    element validated against the job's parameters before anything is written."""
    from orchestrator.slurm.submission import plan_array

    return plan_array(planned.plan, planned.loaded, grid, throttle=throttle)


def queue_sweep(planned: Planned, array: ArrayPlan, environ: Mapping[str, str] | None = None) -> QueuedArray:
    """Queue a planned sweep once (the data directory checked first); SlurmError when sbatch refuses."""
    from orchestrator.slurm.submission import queue_array

    planned.check_data()
    array_id, ids = queue_array(array, os.environ if environ is None else environ)
    return QueuedArray(array_id=array_id, job_dir=array.job_dir, ids=tuple(ids), elements=array.elements)


def check_pass_env(names: Sequence[str], environ: Mapping[str, str] | None = None) -> None:
    """launcher.pass_env: each name must be set here, since sbatch hands this environment to the job."""
    from orchestrator.slurm.submission import check_pass_env as check

    check(names, os.environ if environ is None else environ)
