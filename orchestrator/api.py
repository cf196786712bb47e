"""The Python API: submit a job (or a sweep of jobs) from Python, on Slurm or locally.

    import orchestrator
    handle = orchestrator.submit("smoke", nodes=2, gpus=2, cluster="cluster.yaml", epochs=3)
    handle.state        # Slurm's name: PENDING, RUNNING, COMPLETED, ...
    handle.result()     # waits; the final metrics from result.json
    handles = orchestrator.api.sweep("smoke", [{"lr": 0.1}, {"lr": 0.01}], nodes=1, gpus=2)  # one job array

On Slurm it is ``orch submit``: the same request, :func:`orchestrator.plan.build_plan`, the same
rendered script (golden-tested and shellchecked), the same job folder, queued through
:mod:`orchestrator.submission` and ``slurm.sbatch``. Preemption is the script's: the batch shell
forwards the signal, the ranks checkpoint, and the script requeues the job. A sweep is one Slurm job
array (``--array``), element I in ``<job folder>/I``, exactly as ``orch submit --sweep``.

Locally (no ``sbatch`` on PATH, or ``executor="local"``) the ``job.json`` comes from
:func:`orchestrator.localplan.new_local_run`, as for ``orch run``, and submitit's local executor runs
one task that starts every rank through :class:`orchestrator.local.LocalRunner`, in the background.
"""

from __future__ import annotations

import os
import shutil
import time as _time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from orchestrator import slurm
from orchestrator.config import Cluster, find_cluster, resolve_data_dir
from orchestrator.errors import ConfigError, OrchError
from orchestrator.jobdirs import job_root, log_path, read_job_dir, read_result
from orchestrator.runconfig import LOG_DIR, read_run_config

if TYPE_CHECKING:
    from orchestrator.job import LoadedJob
    from orchestrator.plan import SubmitPlan

__all__ = ["JobHandle", "LocalTask", "submit", "sweep"]

Executor = Literal["auto", "slurm", "local"]
SUBMITIT_DIR = "submitit"
POLL_SECONDS = 1.0
VANISHED_POLLS = 5  # consecutive "unknown" answers before a job counts as gone (one empty answer is no proof)
# submitit's local job states -> Slurm's names, so a handle speaks one vocabulary
LOCAL_STATES = {"RUNNING": "RUNNING", "FINISHED": "COMPLETED", "INTERRUPTED": "CANCELLED"}
# keyword arguments that are request fields (as orch submit's flags), not hyperparameters
REQUEST_FIELDS = ("partition", "time", "job_name", "cpus_per_task", "ntasks_per_node", "account", "qos",
                  "data_dir", "templates")


# --- what runs in the local task (pickled by submitit) -----------------------------------------

@dataclass(frozen=True)
class LocalTask:
    """A whole local run in one submitit task: every rank through ``LocalRunner`` (as ``orch run``)."""

    job_dir: str
    nproc: int

    def __call__(self) -> dict[str, Any] | None:
        from orchestrator.local import LocalRunner

        folder = Path(self.job_dir)
        cfg = read_run_config(folder)
        runner = LocalRunner(job_dir=folder, nproc=self.nproc, preempt_signal=cfg.launcher.preempt_signal)
        outcome = runner.run()
        if outcome.exit_code != 0:
            raise RuntimeError(outcome.message)
        return outcome.result


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

    def status(self) -> slurm.JobStatus:
        if self.executor == "local":
            raw = str(self.submitit_job.state) if self.submitit_job is not None else "UNKNOWN"
            state = LOCAL_STATES.get(raw, "UNKNOWN")
            if state == "COMPLETED" and read_result(self.job_dir) is None:
                state = "FAILED"
            return slurm.JobStatus(job_id=self.job_id, state=state, source="submitit")
        raw_id = read_job_dir(self.job_dir).raw_job_id  # an array element's raw id: the completion log's name
        return slurm.job_status([self.job_id], raw_ids={self.job_id: raw_id} if raw_id else None)[self.job_id]

    def done(self) -> bool:
        status = self.status()
        return status.terminal or (status.state == "UNKNOWN" and read_result(self.job_dir) is not None)

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
            if unknown and read_result(self.job_dir) is not None:
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

    def result(self, timeout: float | None = None) -> dict[str, Any]:
        """Wait for the end; the final metrics (``result.json``). A failed job raises OrchError."""
        state = self.wait(timeout)
        result = read_result(self.job_dir)
        if result is None:
            log = self.log_path(0)
            raise OrchError(f"job {self.job_id} ended {state} without a result.json in {self.job_dir}",
                            hint=f"see its logs: orch logs {self.job_dir} --rank 0 ({log})")
        return result

    def log_path(self, rank: int | None = 0) -> Path:
        return log_path(self.job_dir, None if self.executor == "local" else self.job_id, rank)

    def logs(self, rank: int | None = 0) -> str:
        """The text of one rank's log (``rank=None``: the batch log); empty before it exists."""
        try:
            return self.log_path(rank).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def cancel(self) -> None:
        if self.executor == "local":
            if self.submitit_job is not None:
                self.submitit_job.cancel(check=False)
            return
        slurm.scancel([self.job_id])


# --- submission ---------------------------------------------------------------------------------

def submit(job: str | Path, *, nodes: int | None = None, gpus: int | None = None,
           cluster: str | Path | Cluster | None = None, executor: Executor = "auto",
           **overrides: Any) -> JobHandle:
    """Submit one job; ``overrides`` are its hyperparameters (``epochs=3``) and, by these names,
    request fields as ``orch submit`` has them: partition, time, job_name, cpus_per_task,
    ntasks_per_node, account, qos, data_dir, templates. ``nodes``/``gpus`` default to the job's."""
    kind = _pick_executor(executor)
    loaded, resolved = _load(job, cluster, kind)
    if kind == "local":
        (handle,) = _queue_local(loaded, resolved, nodes, gpus, [overrides])
        return handle
    from orchestrator.submission import queue

    assert resolved is not None
    plan = plan_request(loaded, resolved, nodes, gpus, overrides)
    job_id = queue(plan, os.environ)
    return JobHandle(job_id=job_id, job_dir=plan.job_dir, executor="slurm")


def sweep(job: str | Path, grid: Sequence[Mapping[str, Any]], *, nodes: int | None = None,
          gpus: int | None = None, cluster: str | Path | Cluster | None = None, executor: Executor = "auto",
          throttle: int | None = None, **common: Any) -> list[JobHandle]:
    """One run per entry of ``grid`` (its hyperparameters on top of ``common``), queued as one Slurm
    job array (``throttle``: at most that many at once), as ``orch submit --sweep``. Element I runs
    in ``<job folder>/I``; the handles are in grid order. Locally: one local run per entry."""
    if not grid:
        raise ConfigError("the sweep is empty", hint="pass a list of override mappings, e.g. [{'lr': 0.1}]")
    for entry in grid:
        fields = sorted(set(entry) & set(REQUEST_FIELDS))
        if fields:
            raise ConfigError(f"a sweep entry sets {', '.join(fields)}: the elements of a sweep share the resources",
                              hint="sweep over hyperparameters only; pass request fields once, outside the grid")
    kind = _pick_executor(executor)
    loaded, resolved = _load(job, cluster, kind)
    if kind == "local":
        return _queue_local(loaded, resolved, nodes, gpus, [{**common, **entry} for entry in grid])
    from orchestrator.submission import plan_array, queue_array

    assert resolved is not None
    array = plan_array(plan_request(loaded, resolved, nodes, gpus, common), loaded, grid, throttle=throttle)
    _, ids = queue_array(array, os.environ)
    return [JobHandle(job_id=job_id, job_dir=element.job_dir, executor="slurm")
            for job_id, element in zip(ids, array.elements, strict=True)]


def plan_request(loaded: LoadedJob, cluster: Cluster, nodes: int | None, gpus: int | None,
                 entry: Mapping[str, Any]) -> SubmitPlan:
    """The plan ``orch submit`` makes for the same request (keyword arguments as its flags)."""
    from orchestrator.plan import make_request
    from orchestrator.submission import data_dir_problem, new_plan

    request, params = _split(entry)
    cwd = Path.cwd()
    templates = request.pop("templates", None)
    values = {"job": str(loaded.path), "nodes": nodes, "gpus": gpus, "overrides": params, **request,
              "data_dir": resolve_data_dir(request.get("data_dir"), os.environ, cwd),
              "templates": os.path.normpath(cwd / Path(templates).expanduser()) if templates else None}
    plan = new_plan(make_request(values), cluster, loaded, cwd)
    problem = data_dir_problem(loaded.spec.name, loaded.spec.needs_data, plan.request.data_dir)
    if problem is not None:  # as orch submit: refused before anything is written
        raise problem
    return plan


def _load(job: str | Path, cluster: str | Path | Cluster | None,
          kind: Literal["slurm", "local"]) -> tuple[LoadedJob, Cluster | None]:
    from orchestrator.job import load_job

    loaded = load_job(str(job), os.environ, Path.cwd())
    if isinstance(cluster, Cluster):
        return loaded, cluster
    return loaded, find_cluster(cluster, os.environ, Path.cwd(), required=kind == "slurm")


def _pick_executor(executor: str) -> Literal["slurm", "local"]:
    if executor == "auto":
        return "slurm" if shutil.which("sbatch") else "local"
    if executor not in ("slurm", "local"):
        raise ConfigError(f"unknown executor {executor!r}", hint="use 'auto', 'slurm' or 'local'")
    return "slurm" if executor == "slurm" else "local"


def _split(entry: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    request = {k: v for k, v in entry.items() if k in REQUEST_FIELDS}
    params = {k: v for k, v in entry.items() if k not in REQUEST_FIELDS}
    return request, params


def _queue_local(loaded: LoadedJob, cluster: Cluster | None, nodes: int | None, gpus: int | None,
                 entries: Sequence[Mapping[str, Any]]) -> list[JobHandle]:
    import submitit

    from orchestrator.job import make_params
    from orchestrator.localplan import new_local_run

    res = loaded.spec.resources
    nproc = (nodes or res.nodes) * max(1, gpus if gpus is not None else res.gpus)
    cwd = Path.cwd()
    planned = []
    for entry in entries:  # every entry is validated before anything runs
        request, params = _split(entry)
        make_params(loaded.spec, params)
        data_dir = resolve_data_dir(request.get("data_dir"), os.environ, cwd)
        planned.append((params, data_dir, request.get("job_name")))
    handles = []
    for params, data_dir, name in planned:
        job_dir, cfg = new_local_run(loaded, params, nproc=nproc, root=job_root(cluster).absolute(),
                                     data_dir=data_dir, job_name=name, cluster=cluster)
        executor = submitit.LocalExecutor(folder=job_dir / SUBMITIT_DIR)
        executor.update_parameters(timeout_min=_minutes(cfg.time), tasks_per_node=1, nodes=1)
        job = executor.submit(LocalTask(job_dir=str(job_dir), nproc=cfg.tasks_per_node))
        handles.append(JobHandle(job_id=str(job.job_id), job_dir=job_dir, executor="local", submitit_job=job))
    return handles


def _minutes(time_text: str | None) -> int:
    from orchestrator.units import parse_time

    seconds = None if time_text in (None, "UNLIMITED") else parse_time(time_text)
    return 24 * 60 if seconds is None else max(1, -(-seconds // 60))
