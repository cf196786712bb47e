"""Cancel jobs, or only signal them (``orch cancel``, ``orch top``'s cancel and checkpoint-and-requeue keys,
``orch mcp``'s cancel tool): the job of each id or folder named, asked of squeue first (scancel says nothing
of unknown or finished jobs), never a job id Slurm gave to another job since, a job array as a whole."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orchestrator.errors import OrchError, SlurmError
from orchestrator.records.jobdirs import JobDir, is_job_id
from orchestrator.service.jobs import Found, Scope, chosen_cluster_name, find_job, locate
from orchestrator.slurm import client as slurm
from orchestrator.slurm import jobstate, queries
from orchestrator.slurm import state as slurmstate


def _folder(ref: str, scope: Scope) -> Found | None:
    """The job folder of a job id (the index of submitted jobs, else the job root; an id whose job was
    submitted again under a new one: the folder, whose job now is the one to cancel), None when orch
    did not submit it; a folder path must be one."""
    if not is_job_id(ref):
        return Found(find_job(ref, scope))
    try:
        return locate(ref, scope)
    except OrchError:
        return None  # a job orch did not submit: Slurm's answer is all there is


def cancel(refs: Sequence[str], scope: Scope, signal: str | None = None) -> dict[str, Any]:
    """Cancel (``signal``: only signal) the jobs of ``refs``, ids or folders: what ``orch cancel --json`` prints,
    ``acted`` (the live jobs scancel was given), ``action`` (``cancel`` or ``signal``), ``finished`` (id -> its
    final state), ``unknown`` (ids Slurm does not know), ``followed`` when some (an id asked for whose job was
    submitted again under a new id -> how: ``38 -> 39 (resubmitted without node2)``, 39 acted on). A job id
    Slurm gave to another job since is refused before anything is sent (OrchError)."""
    folders: dict[str, JobDir | None] = {}
    followed: dict[str, str] = {}  # id asked for -> "38 -> 39 (resubmitted without node2)"
    for ref in refs:
        hit = _folder(ref, scope)
        job = hit.job if hit is not None else None
        folders.setdefault(job.queued_id() if job is not None else ref, job)
        if hit is not None and hit.followed is not None:
            followed[ref] = hit.followed
    ids = list(folders)
    # scancel says nothing about unknown or finished jobs: ask squeue first, so the answer is true.
    found = queries.squeue(ids)
    cluster = chosen_cluster_name(scope)  # the ids and folders named: their own records say their cluster
    for job_id, job in folders.items():  # an id Slurm gave to another job since: never cancel that one
        why = jobstate.reused(job, found.get(job_id), cluster)
        if why is not None:
            where = job.path if job is not None else "?"
            raise OrchError(f"job id {job_id} was reused: Slurm's job {job_id} is not the job of {where} ({why}); "
                            "nothing was cancelled",
                            hint=f"the folder's job has ended; to cancel Slurm's job {job_id} anyway: scancel {job_id}")
    known = {i: whole(i, found) for i in ids}
    live = [i for i, s in known.items() if s is not None and not s.terminal]
    if live:
        slurm.scancel(live, signal=signal, full=bool(signal))
    done: dict[str, Any] = {"acted": live, "action": "signal" if signal else "cancel",
                            "finished": {i: s.state for i, s in known.items() if s is not None and s.terminal},
                            "unknown": [i for i in ids if known[i] is None]}
    if followed:
        done["followed"] = followed
    return done


def unknown_error(unknown: Sequence[str]) -> SlurmError:
    """The error for the ids Slurm does not know (:func:`cancel`'s ``unknown``), raised after the others."""
    return SlurmError(f"Slurm does not know job{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}",
                      hint="check the id with orch list or orch status (finished jobs leave the queue after MinJobAge)")


def whole(job_id: str, found: dict[str, slurmstate.JobStatus]) -> slurmstate.JobStatus | None:
    """squeue's answer for ``job_id``; a job array's id (``1234``) stands for its elements (``1234_0``,
    ``1234_[1-3]``): live while any element is."""
    if job_id in found:
        return found[job_id]
    elements = [s for k, s in found.items() if "_" not in job_id and k.startswith(job_id + "_")]
    if not elements:
        return None
    return next((s for s in elements if not s.terminal), elements[0])
