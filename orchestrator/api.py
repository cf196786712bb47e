"""The Python API: submit a job (or a sweep of jobs) from Python, on Slurm or locally.

    import orchestrator
    handle = orchestrator.submit("smoke", nodes=2, gpus=2, cluster="cluster.yaml", epochs=3)
    handle.state        # Slurm's name: PENDING, RUNNING, COMPLETED, ...
    handle.result()     # waits; the final metrics from result.json
    handles = orchestrator.api.sweep("smoke", [{"lr": 0.1}, {"lr": 0.01}], nodes=1, gpus=2)  # one job array
    orchestrator.submit("train.py", script_args=["--lr", "0.1"], nodes=2, gpus=8, gpus_per_task=2,
                        constraint="a100", env={"NCCL_DEBUG": "INFO"})  # a script, as orch submit train.py -- ...

On Slurm it is ``orch submit``: the same options (:class:`orchestrator.service.request.SubmitOptions`), planned
by the same :func:`orchestrator.service.plan.prepare` (the same rendered script, golden-tested and shellchecked,
the same job folder) and queued by the same :mod:`orchestrator.service.queue`. Preemption is the script's:
the batch shell forwards the signal, the ranks checkpoint, and the script requeues the job. A sweep is one Slurm job
array (``--array``), element I in ``<job folder>/I``, exactly as ``orch submit --sweep``.

Locally (no ``sbatch`` on PATH, or ``executor="local"``) the runs are :mod:`orchestrator.service.localjobs`':
the ``job.json`` as for ``orch run``, and submitit's local executor runs one task that starts every rank through
:class:`orchestrator.local.runner.LocalRunner`, in the background.
"""

from __future__ import annotations

import os
import shutil
import sys
import time as _time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from orchestrator.errors import ConfigError, OrchError
from orchestrator.service import cancel as cancelling
from orchestrator.service import logs as logfiles
from orchestrator.service import status as jobstatus
from orchestrator.service.jobs import Scope
from orchestrator.service.localjobs import LocalTask
from orchestrator.spec.cluster import Cluster
from orchestrator.spec.options import request_fields
from orchestrator.spec.runconfig import LOG_DIR, read_run_config

if TYPE_CHECKING:
    from orchestrator.service.plan import Planned
    from orchestrator.service.request import SubmitOptions, SubmitRequest
    from orchestrator.slurm.state import JobStatus
    from orchestrator.spec.job import LoadedJob

__all__ = ["JobHandle", "LocalTask", "submit", "sweep"]

Executor = Literal["auto", "slurm", "local"]
POLL_SECONDS = 1.0
VANISHED_POLLS = 5  # consecutive "unknown" answers before a job counts as gone (one empty answer is no proof)
# submitit's local job states -> Slurm's names, so a handle speaks one vocabulary
LOCAL_STATES = {"RUNNING": "RUNNING", "FINISHED": "COMPLETED", "INTERRUPTED": "CANCELLED"}
# keyword arguments that are request fields (as orch submit's flags), not hyperparameters: the table's
# (orchestrator/spec/options.py) less job, nodes, gpus and overrides, which submit() names itself
REQUEST_FIELDS = tuple(name for name in request_fields() if name not in ("job", "nodes", "gpus", "overrides"))


# --- handles ------------------------------------------------------------------------------------

@dataclass
class JobHandle:
    """A submitted job: its id and folder, and what can be asked of it."""

    job_id: str
    job_dir: Path
    executor: Literal["slurm", "local"]
    submitit_job: Any = field(repr=False, default=None)

    @property
    def state(self) -> str:
        """Slurm's state name (``PENDING``, ``RUNNING``, ``COMPLETED``, ``FAILED``, ...)."""
        return self.status().state

    def status(self) -> JobStatus:
        if self.executor == "local":
            raw = str(self.submitit_job.state) if self.submitit_job is not None else "UNKNOWN"
            state = LOCAL_STATES.get(raw, "UNKNOWN")
            if state == "COMPLETED" and not self.is_script and jobstatus.final_metrics(self.job_dir) is None:
                state = "FAILED"  # a script writes no result.json; its exit code already said
            return jobstatus.local_status(self.job_id, state)
        return jobstatus.job_status(self.job_id, self.job_dir)

    def done(self) -> bool:
        status = self.status()
        return status.terminal or (status.state == "UNKNOWN" and jobstatus.final_metrics(self.job_dir) is not None)

    def wait(self, timeout: float | None = None) -> str:
        """Block until the job ends; its final state. Raises OrchError after ``timeout`` seconds, and
        when Slurm no longer knows the job (its folder then says whether it ever ran)."""
        deadline = None if timeout is None else _time.monotonic() + timeout
        unknown = 0
        while True:
            status = self.status()
            if status.terminal:
                return status.state
            unknown = unknown + 1 if status.state == "UNKNOWN" else 0
            if unknown and jobstatus.final_metrics(self.job_dir) is not None:
                return status.state
            if unknown >= VANISHED_POLLS:
                raise self._vanished()
            if deadline is not None and _time.monotonic() > deadline:
                raise OrchError(f"job {self.job_id} did not end within {timeout:g} s",
                                hint=f"it is {status.state}; wait longer or cancel() it")
            _time.sleep(POLL_SECONDS)

    def _vanished(self) -> OrchError:
        logs = sorted(p.name for p in (self.job_dir / LOG_DIR).glob("*.out")) if self.executor == "slurm" else []
        if not logs:
            return OrchError(f"Slurm no longer knows job {self.job_id}, and it never ran (no log in "
                             f"{self.job_dir / LOG_DIR})",
                             hint="it was probably cancelled while pending; submit it again")
        return OrchError(f"Slurm no longer knows job {self.job_id}; it ran but left no result.json in {self.job_dir}",
                         hint=f"see its logs: orch logs {self.job_dir} --rank 0 ({', '.join(logs)})")

    @property
    def is_script(self) -> bool:
        """A script job (``train.py`` / ``module=``): it has no ``result.json``, its exit code is its result."""
        return read_run_config(self.job_dir).script is not None

    def result(self, timeout: float | None = None) -> dict[str, Any]:
        """Wait for the end; the final metrics (``result.json``; a script job: ``{"state": "COMPLETED"}``).
        A failed job raises OrchError."""
        state = self.wait(timeout)
        result = jobstatus.final_metrics(self.job_dir)
        if result is None and self.is_script and state == "COMPLETED":
            return {"state": state}
        if result is None:
            log = self.log_path(0)
            raise OrchError(f"job {self.job_id} ended {state} without a result.json in {self.job_dir}",
                            hint=f"see its logs: orch logs {self.job_dir} --rank 0 ({log})")
        return result

    def log_path(self, rank: int | None = 0) -> Path:
        return logfiles.log_file(self.job_dir, None if self.executor == "local" else self.job_id, rank)

    def logs(self, rank: int | None = 0) -> str:
        """The text of one rank's log (``rank=None``: the batch log); empty before it exists."""
        return logfiles.log_text(self.log_path(rank))

    def cancel(self) -> None:
        if self.executor == "local":
            if self.submitit_job is not None:
                self.submitit_job.cancel(check=False)
            return
        # as orch cancel FOLDER: asked of squeue first, never a job id Slurm gave to another job since, and
        # the folder's job now when it was submitted again under a new id
        cancelling.cancel([str(self.job_dir)], Scope())


# --- submission ---------------------------------------------------------------------------------

def submit(job: str | Path | None = None, *, nodes: int | None = None, gpus: int | None = None,
           cluster: str | Path | Cluster | None = None, executor: Executor = "auto",
           **overrides: Any) -> JobHandle:
    """Submit one job or script; keyword arguments are ``orch submit``'s flags by their names
    (:data:`REQUEST_FIELDS`: ``partition``, ``time``, ``gpus_per_task``, ``constraint``,
    ``exclusive=True``, ``sbatch_args={"licenses": "scratch"}``, ``env={"NCCL_DEBUG": "INFO"}``,
    ``container_image``, ...), every other keyword is a hyperparameter of the job (``epochs=3``).

    A script runs as ``orch submit train.py -- ARGS`` does: ``submit("train.py", script_args=[...])``
    or ``submit(module="pkg.train", script_args=[...])``. ``nodes``/``gpus`` default to the job's."""
    kind = _pick_executor(executor)
    options = _options(job, nodes, gpus, overrides)
    if kind == "local":
        (handle,) = _queue_local(options, _cluster(cluster, kind), [{}])
        return handle
    from orchestrator.service.queue import queue

    queued = queue(_plan(options, _cluster(cluster, kind)), os.environ)
    return JobHandle(job_id=queued.job_id, job_dir=queued.job_dir, executor="slurm")


def run(job: str | Path | None = None, *, nodes: int | None = None, gpus: int | None = None,
        cluster: str | Path | Cluster | None = None, timeout: float | None = None, **overrides: Any) -> JobHandle:
    """Run one job or script on this machine and wait for its end, as ``orch run`` does: ``nodes`` x
    ``gpus`` ranks as local processes (default: the job's resources), the same keywords as :func:`submit`.
    The finished job's handle (``handle.result()``: the final metrics); a failed run raises OrchError."""
    handle = submit(job, nodes=nodes, gpus=gpus, cluster=cluster, executor="local", **overrides)
    handle.result(timeout)
    return handle


def sweep(job: str | Path, grid: Sequence[Mapping[str, Any]], *, nodes: int | None = None,
          gpus: int | None = None, cluster: str | Path | Cluster | None = None, executor: Executor = "auto",
          throttle: int | None = None, **common: Any) -> list[JobHandle]:
    """One run per entry of ``grid`` (its hyperparameters on top of ``common``), queued as one Slurm
    job array (``throttle``: at most that many at once), as ``orch submit --sweep``. Element I runs
    in ``<job folder>/I``; the handles are in grid order. ``common`` takes the request fields of
    :func:`submit`. Locally: one local run per entry."""
    if not grid:
        raise ConfigError("the sweep is empty", hint="pass a list of override mappings, e.g. [{'lr': 0.1}]")
    for entry in grid:
        names = sorted(set(entry) & set(REQUEST_FIELDS))
        if names:
            raise ConfigError(f"a sweep entry sets {', '.join(names)}: the elements of a sweep share the resources",
                              hint="sweep over hyperparameters only; pass request fields once, outside the grid")
    kind = _pick_executor(executor)
    options = _options(job, nodes, gpus, common)
    if kind == "local":
        return _queue_local(options, _cluster(cluster, kind), grid)
    from orchestrator.service.queue import plan_sweep, queue_sweep

    planned = _plan(options, _cluster(cluster, kind))
    queued = queue_sweep(planned, plan_sweep(planned, grid, throttle=throttle), os.environ)
    return [JobHandle(job_id=job_id, job_dir=element.job_dir, executor="slurm")
            for job_id, element in zip(queued.ids, queued.elements, strict=True)]


def _request(options: SubmitOptions, cluster: Cluster | None) -> tuple[SubmitRequest, LoadedJob]:
    """The request ``orch submit`` makes of the same options (the doctor also leaves out cluster.yaml's
    doctor.ignore): :func:`orchestrator.service.request.request_of`."""
    from orchestrator.service.request import request_of, with_cluster

    asked = request_of(with_cluster(options, cluster), cwd=Path.cwd(), environ=os.environ,
                       search=[Path(p) for p in sys.path if p])
    return asked.request, asked.loaded


def _plan(options: SubmitOptions, cluster: Cluster | None) -> Planned:
    """The plan ``orch submit`` makes for the same options (:func:`orchestrator.service.plan.prepare`), a job
    without its data directory refused before anything is written."""
    from orchestrator.service.plan import prepare

    assert cluster is not None  # find_cluster(required=True) raised otherwise
    planned = prepare(options, cluster, Path.cwd())
    planned.check_data()
    return planned


def _options(job: str | Path | None, nodes: int | None, gpus: int | None,
             keywords: Mapping[str, Any]) -> SubmitOptions:
    """Keyword arguments -> submit options: request fields by name, the rest hyperparameters."""
    from orchestrator.service.request import SubmitOptions

    fields = {k: v for k, v in keywords.items() if k in REQUEST_FIELDS}
    params = {k: v for k, v in keywords.items() if k not in REQUEST_FIELDS}
    script_args = fields.get("script_args")
    if script_args is not None:
        fields["script_args"] = [str(a) for a in script_args]
    return SubmitOptions(job=None if job is None else str(job), nodes=nodes, gpus=gpus, overrides=params, **fields)


def _cluster(cluster: str | Path | Cluster | None, kind: Literal["slurm", "local"]) -> Cluster | None:
    from orchestrator.service.request import cluster_of

    return cluster_of(cluster, Path.cwd(), required=kind == "slurm")


def _pick_executor(executor: str) -> Literal["slurm", "local"]:
    if executor == "auto":
        return "slurm" if shutil.which("sbatch") else "local"
    if executor not in ("slurm", "local"):
        raise ConfigError(f"unknown executor {executor!r}", hint="use 'auto', 'slurm' or 'local'")
    return "slurm" if executor == "slurm" else "local"


def _queue_local(options: SubmitOptions, cluster: Cluster | None,
                 entries: Sequence[Mapping[str, Any]]) -> list[JobHandle]:
    """Local runs (as ``orch run``): one per entry of hyperparameters on top of ``options``."""
    from orchestrator.service.localjobs import queue_local

    request, loaded = _request(options, cluster)
    return [JobHandle(job_id=queued.job_id, job_dir=queued.job_dir, executor="local", submitit_job=queued.job)
            for queued in queue_local(request, loaded, cluster, entries)]
