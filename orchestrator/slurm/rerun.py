"""``orch resubmit SWEEP --failed``: a sweep's failed and timed-out elements submitted again, and only those.

Each element's state is read as ``orch status`` reads it (:func:`orchestrator.slurm.jobstate.rows`: Slurm's
answer, else the folder's records). The elements whose state orch reads as ``failed`` or ``timeout``
(:data:`RERUN_STATES`: FAILED, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, TIMEOUT, DEADLINE) are queued again as
one new job array over just their indices: the sweep folder's own ``sbatch.sh`` with ``--array=1,3`` on the
command line (it wins over the script's ``#SBATCH --array``; the throttle of ``array.json`` is kept). The
script runs element N in ``<sweep>/N`` as before, so each element keeps its folder, its job.json and its
checkpoints, and resumes from its newest checkpoint the way a requeued job does (the batch script checks
it against job.json first: ``records/resumecheck.py``).

Refused, with a hint: elements still queued or running (wait, or cancel them), nothing failed, a job that is
not a sweep (a single job continues from its checkpoint through ``launcher.requeue``, or ``orch run --resume``
locally). Cancelled and preempted elements are not submitted again (a cancel was asked for; a preempted
element is requeued by its own batch script when ``launcher.requeue`` is on).

Recorded (:func:`rerun`): the new ids in the folders (the sweep's ``job_id``, each element's, as a submit
records them, with ``submitted.json`` and the user's index) and the resubmission in the sweep's
``resubmissions.json`` (:mod:`orchestrator.records.sweeps`). SIGINT/SIGTERM/SIGHUP wait until the ids are
recorded; a SIGKILL in between leaves the old ids until the new elements start and record their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import ConfigError, OrchError
from orchestrator.records.jobdirs import read_id, read_job_dir
from orchestrator.records.jobindex import now_text
from orchestrator.records.joblayout import ARRAY_FILE, element_dir
from orchestrator.records.sweeps import indices, record_resubmission
from orchestrator.slurm import jobstate
from orchestrator.slurm.tracking import deferred_signals, private_umask, record_ids, record_submitted
from orchestrator.spec.numbers import to_int
from orchestrator.spec.runconfig import JOB_ID_FILE, SCRIPT_FILE, read_run_config
from orchestrator.spec.safefile import read_json

RERUN_STATES = frozenset({"failed", "timeout"})  # orch's reading of Slurm's states (slurm/state.py's table)


@dataclass(frozen=True)
class ElementState:
    index: int
    job_id: str | None
    state: str  # Slurm's name, as orch status shows it
    orch_state: str  # orch's reading: failed, timeout, running, ...
    terminal: bool
    job_dir: Path

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "job_id": self.job_id, "state": self.state, "job_dir": str(self.job_dir)}


@dataclass(frozen=True)
class Rerun:
    """A resubmission: the new array's id and the elements it runs (their ids before)."""

    folder: Path
    job_id: str | None  # None: a dry run
    array: str  # the --array value
    elements: tuple[ElementState, ...]

    def element_id(self, element: ElementState) -> str | None:
        return f"{self.job_id}_{element.index}" if self.job_id else None

    def as_dict(self) -> dict[str, Any]:
        return {"job_id": self.job_id, "job_dir": str(self.folder), "array": self.array,
                "elements": [{"index": e.index, "job_id": self.element_id(e), "job_dir": str(e.job_dir),
                              "was": e.job_id, "state": e.state} for e in self.elements]}


def element_states(folder: Path, *, cluster: str | None = None) -> list[ElementState]:
    """Each element's state as ``orch status`` reads it (one batched Slurm call)."""
    jobs = [read_job_dir(element_dir(folder, index)) for index in indices(folder)]
    rows = jobstate.rows([(job.job_id, job) for job in jobs], cluster=cluster)
    return [ElementState(index=int(job.path.name), job_id=job.job_id, state=str(row["state"]),
                         orch_state=str(row["orch_state"]), terminal=bool(row["terminal"]), job_dir=job.path)
            for job, row in zip(jobs, rows, strict=True)]


def choose(folder: Path, states: Sequence[ElementState]) -> list[ElementState]:
    """The elements to submit again (pure); OrchError when some still run or none failed."""
    live = [s for s in states if not s.terminal and s.orch_state != "unknown"]
    if live:
        shown = ", ".join(f"{s.job_id or s.index} {s.state}" for s in live)
        raise OrchError(f"sweep {folder} still has elements queued or running ({shown})",
                        hint=f"wait until they end (orch status {live[0].job_id or live[0].job_dir}), or cancel "
                             "them (orch cancel ID), then resubmit")
    failed = [s for s in states if s.orch_state in RERUN_STATES]
    if not failed:
        counts: dict[str, int] = {}
        for s in states:
            counts[s.state] = counts.get(s.state, 0) + 1
        shown = ", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "no elements"
        raise ConfigError(f"no element of sweep {folder} failed or timed out ({shown}): nothing to submit again",
                          hint=f"orch compare {folder} shows the elements' results")
    return failed


def array_spec(chosen: Sequence[ElementState], throttle: int | None) -> str:
    """``--array``'s value: the indices, with the sweep's throttle (``1,3%2``)."""
    return ",".join(str(s.index) for s in sorted(chosen, key=lambda s: s.index)) + (f"%{throttle}" if throttle else "")


def throttle_of(folder: Path) -> int | None:
    """The sweep's ``--array-throttle`` (array.json's ``throttle``), else None."""
    record = read_json(folder / ARRAY_FILE, dict)
    value = to_int(record.get("throttle")) if record is not None else None
    return value if value and value > 0 else None


def plan_rerun(folder: Path, *, cluster: str | None = None) -> Rerun:
    """What ``orch resubmit --failed`` would queue (nothing queued yet)."""
    chosen = choose(folder, element_states(folder, cluster=cluster))
    return Rerun(folder=folder, job_id=None, array=array_spec(chosen, throttle_of(folder)), elements=tuple(chosen))


def rerun(plan: Rerun) -> Rerun:
    """Queue ``plan``'s elements as one new job array and record it; the Rerun with the new id."""
    from orchestrator.slurm import client as slurm

    folder = plan.folder
    previous = read_id(folder / JOB_ID_FILE)
    with deferred_signals():  # the ids are recorded before a signal stops orch
        with private_umask():  # as a submit: the batch log is the user's alone
            job_id = slurm.sbatch(folder / SCRIPT_FILE, options=[f"--array={plan.array}"])
        submitted = now_text()
        done = Rerun(folder=folder, job_id=job_id, array=plan.array, elements=plan.elements)
        record_ids([(folder, job_id), *((e.job_dir, str(done.element_id(e))) for e in plan.elements)])
        for element in plan.elements:
            try:
                record_submitted(element.job_dir, str(done.element_id(element)), read_run_config(element.job_dir),
                                 submitted)
            except OrchError:  # a damaged job.json: the element's job_id still names its run
                continue
        record_resubmission(folder, job_id, {e.index: e.job_id for e in plan.elements}, previous=previous,
                            submitted=submitted)
    return done
