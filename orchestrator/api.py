"""The Python API: submit a job (or a sweep of jobs) from Python, on Slurm through submitit or locally.

    import orchestrator
    handle = orchestrator.submit("smoke", nodes=2, gpus=2, cluster="cluster.yaml", epochs=3)
    handle.state        # Slurm's name: PENDING, RUNNING, COMPLETED, ...
    handle.result()     # waits; the final metrics from result.json
    handles = orchestrator.api.sweep("smoke", [{"lr": 0.1}, {"lr": 0.01}], nodes=1, gpus=2)  # one job array

It is built from the same pieces as ``orch submit``: the job spec (:mod:`orchestrator.job`),
cluster.yaml, and :func:`orchestrator.plan.build_plan`, which validates the request against the
partition and gives the job folder and ``job.json``. submitit then writes and queues the batch
script (its Slurm executor when ``sbatch`` is on PATH, its local executor elsewhere); in every
task it runs :class:`RankTask`, i.e. ``orchestrator.launch`` for that rank, so a task sees the same
``job.json`` and derives the same environment as under ``orch submit``. Locally one task runs
all ranks through :class:`orchestrator.local.LocalRunner`, as ``orch run`` does.

Each job keeps orch's folder layout: rank logs in ``logs/<job id>-rank<R>.out`` (``orch logs``
works), ``metrics.jsonl``, ``result.json``; submitit's own files live in ``<job folder>/submitit``.
Preemption works as with ``orch submit``: the ranks stop together and checkpoint, and rank 0
requeues the job (``scontrol requeue``), which resumes from the checkpoint.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import sys
import time as _time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from orchestrator import slurm
from orchestrator.config import Cluster, find_cluster_file, load_cluster
from orchestrator.errors import ConfigError, OrchError, SlurmError
from orchestrator.jobdirs import job_root, read_result
from orchestrator.runconfig import (
    JOB_ID_FILE,
    LOG_DIR,
    REQUEUE_FILE,
    SCRIPT_FILE,
    SUBMIT_ERROR_FILE,
    RunConfig,
    read_run_config,
    write_run_config,
)

if TYPE_CHECKING:
    from orchestrator.job import LoadedJob
    from orchestrator.render import ScriptContext

__all__ = ["JobHandle", "LocalTask", "RankTask", "submit", "sweep"]

Executor = Literal["auto", "slurm", "local"]
DATA_DIR_ENV_VAR = "ORCH_DATA_DIR"
SUBMITIT_DIR = "submitit"
POLL_SECONDS = 1.0
# submitit's local job states -> Slurm's names, so a handle speaks one vocabulary
LOCAL_STATES = {"RUNNING": "RUNNING", "FINISHED": "COMPLETED", "INTERRUPTED": "CANCELLED"}


# --- what runs in the tasks (pickled by submitit) ----------------------------------------------

@dataclass(frozen=True)
class RankTask:
    """One rank of a Slurm job: ``orchestrator.launch`` with the job folder, its output in the rank log."""

    job_dir: str

    def __call__(self) -> None:
        """Never returns: the task ends as ``python -m orchestrator.launch`` does, with ``os._exit``
        (torch's C++ threads can abort a normal interpreter exit). So submitit keeps no result
        pickle; the result is ``result.json``, which :meth:`JobHandle.result` reads."""
        from orchestrator import launch

        job_id = slurm.own_job_id(os.environ) or "unknown"
        rank = os.environ.get("SLURM_PROCID", "0")
        folder = Path(self.job_dir)
        with _output_to(folder / LOG_DIR / f"{job_id}-rank{rank}.out"):
            code = launch.main(["--job-dir", self.job_dir])
            marker = folder / REQUEUE_FILE
            if code == 0 and rank == "0" and marker.exists() and read_run_config(folder).launcher.requeue:
                marker.unlink()
                print(f"orch: the ranks checkpointed after preemption; requeueing job {job_id}", flush=True)
                try:
                    slurm.requeue(job_id)  # ends this run; the requeued one resumes from the checkpoint
                except OrchError as exc:
                    print(exc.render(), file=sys.stderr, flush=True)
                    code = 1
        logging.shutdown()
        os._exit(code)


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


@contextlib.contextmanager
def _output_to(path: Path) -> Iterator[None]:
    """Send this process's stdout and stderr (file descriptors 1 and 2) to ``path``, appending."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (target, *saved):
            os.close(fd)


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
        return slurm.job_status([self.job_id])[self.job_id]

    def done(self) -> bool:
        status = self.status()
        return status.terminal or (status.state == "UNKNOWN" and read_result(self.job_dir) is not None)

    def wait(self, timeout: float | None = None) -> str:
        """Block until the job ends; its final state. Raises OrchError after ``timeout`` seconds."""
        deadline = None if timeout is None else _time.monotonic() + timeout
        while not self.done():
            if deadline is not None and _time.monotonic() > deadline:
                raise OrchError(f"job {self.job_id} did not end within {timeout:g} s",
                                hint=f"it is {self.state}; wait longer or cancel() it")
            _time.sleep(POLL_SECONDS)
        return self.state

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
        logs = self.job_dir / LOG_DIR
        if self.executor == "local":
            return logs / f"local-rank{0 if rank is None else rank}.out"
        return logs / (f"slurm-{self.job_id}.out" if rank is None else f"{self.job_id}-rank{rank}.out")

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
    request fields as ``orch submit`` has them: partition, time, job_name, cpus_per_task, account,
    qos, data_dir. ``nodes``/``gpus`` default to the job's resources."""
    (handle,) = _submit_all(job, [overrides], nodes=nodes, gpus=gpus, cluster=cluster, executor=executor,
                            array=False)
    return handle


def sweep(job: str | Path, grid: Sequence[Mapping[str, Any]], *, nodes: int | None = None,
          gpus: int | None = None, cluster: str | Path | Cluster | None = None, executor: Executor = "auto",
          **common: Any) -> list[JobHandle]:
    """One job per entry of ``grid`` (each entry's overrides on top of ``common``), queued as one
    Slurm job array. Every element gets its own job folder; all share the resources."""
    if not grid:
        raise ConfigError("the sweep is empty", hint="pass a list of override mappings, e.g. [{'lr': 0.1}]")
    return _submit_all(job, [{**common, **entry} for entry in grid], nodes=nodes, gpus=gpus, cluster=cluster,
                       executor=executor, array=True)


REQUEST_FIELDS = ("partition", "time", "job_name", "cpus_per_task", "account", "qos", "data_dir")


@dataclass(frozen=True)
class _Prepared:
    job_dir: Path
    cfg: RunConfig
    context: ScriptContext | None  # None for local runs


def _submit_all(job: str | Path, entries: Sequence[Mapping[str, Any]], *, nodes: int | None,
                gpus: int | None, cluster: str | Path | Cluster | None, executor: Executor,
                array: bool) -> list[JobHandle]:
    from orchestrator.job import load_job

    kind = _pick_executor(executor)
    loaded = load_job(str(job), os.environ, Path.cwd())
    resolved = _cluster(cluster, required=kind == "slurm")
    if kind == "slurm":
        assert resolved is not None
        prepared = [_prepare_slurm(loaded, resolved, nodes, gpus, entry) for entry in entries]
        return _queue_slurm(prepared, array)
    prepared = [_prepare_local(loaded, resolved, nodes, gpus, entry) for entry in entries]
    return _queue_local(prepared)


def _pick_executor(executor: str) -> Literal["slurm", "local"]:
    if executor == "auto":
        return "slurm" if shutil.which("sbatch") else "local"
    if executor not in ("slurm", "local"):
        raise ConfigError(f"unknown executor {executor!r}", hint="use 'auto', 'slurm' or 'local'")
    return "slurm" if executor == "slurm" else "local"


def _cluster(cluster: str | Path | Cluster | None, *, required: bool) -> Cluster | None:
    if isinstance(cluster, Cluster):
        return cluster
    try:
        path = find_cluster_file(str(cluster) if cluster is not None else None, os.environ, Path.cwd())
    except ConfigError:
        if required or cluster is not None:
            raise
        return None
    return load_cluster(path)


def _split(entry: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    request = {k: v for k, v in entry.items() if k in REQUEST_FIELDS}
    params = {k: v for k, v in entry.items() if k not in REQUEST_FIELDS}
    return request, params


def _prepare_slurm(loaded: LoadedJob, cluster: Cluster, nodes: int | None, gpus: int | None,
                   entry: Mapping[str, Any]) -> _Prepared:
    from orchestrator.plan import build_plan, make_request, write_job_dir

    request_fields, params = _split(entry)
    data_dir = request_fields.pop("data_dir", None) or os.environ.get(DATA_DIR_ENV_VAR)
    request = make_request({"job": str(loaded.path), "nodes": nodes, "gpus": gpus, "overrides": params,
                            "data_dir": str(Path(data_dir).expanduser().absolute()) if data_dir else None,
                            **request_fields})
    root = job_root(cluster).absolute()
    plan = build_plan(request, cluster, loaded, python=cluster.launcher.python or sys.executable,
                      now=datetime.now(), token=secrets.token_hex(3), job_root=root)
    job_dir = write_job_dir(plan)
    (job_dir / SCRIPT_FILE).unlink()  # submitit writes the script that is queued, in submitit/
    return _Prepared(job_dir=job_dir, cfg=plan.run_config, context=plan.context)


def _prepare_local(loaded: LoadedJob, cluster: Cluster | None, nodes: int | None, gpus: int | None,
                   entry: Mapping[str, Any]) -> _Prepared:
    from orchestrator.config import Launcher
    from orchestrator.job import make_params
    from orchestrator.local import new_job_dir

    request_fields, overrides = _split(entry)
    params = make_params(loaded.spec, overrides)
    res = loaded.spec.resources
    nproc = (nodes or res.nodes) * max(1, gpus if gpus is not None else res.gpus)
    data_dir = request_fields.get("data_dir") or os.environ.get(DATA_DIR_ENV_VAR)
    name = str(request_fields.get("job_name") or loaded.spec.name)
    job_dir = new_job_dir(job_root(cluster).absolute(), name)
    cfg = RunConfig(
        mode="local", job_name=name, job_file=str(loaded.path), params=params.model_dump(mode="json"),
        nodes=1, gpus_per_node=0, tasks_per_node=nproc, cpus_per_task=max(1, (os.cpu_count() or 1) // nproc),
        data_dir=str(Path(data_dir).expanduser().absolute()) if data_dir else None, job_dir=str(job_dir),
        cluster_name=cluster.name if cluster else None, launcher=cluster.launcher if cluster else Launcher(),
        env=dict(cluster.env) if cluster else {},
        created=datetime.now().astimezone().isoformat(timespec="seconds"))
    write_run_config(job_dir, cfg)
    return _Prepared(job_dir=job_dir, cfg=cfg, context=None)


def slurm_parameters(context: ScriptContext) -> dict[str, Any]:
    """submitit SlurmExecutor parameters for a plan's ScriptContext: the same #SBATCH values and srun
    flags as orch's own template (pure)."""
    sbatch: dict[str, Any] = {"time": context.time, "open-mode": "append",
                              "signal": f"{context.preempt_signal}@{context.preempt_before}"}
    if context.gpus_per_node:
        sbatch["gres" if context.gpu_flag == "gres" else "gpus-per-node"] = (
            f"gpu:{context.gpu_spec}" if context.gpu_flag == "gres" else context.gpu_spec)
    if context.mem_per_gpu_mb:
        sbatch["mem-per-gpu"] = f"{context.mem_per_gpu_mb}M"
    elif context.mem_mb:
        sbatch["mem"] = f"{context.mem_mb}M"
    for name in ("account", "qos"):
        if getattr(context, name):
            sbatch[name] = getattr(context, name)
    if context.requeue:
        sbatch["requeue"] = True
    if context.master_addr:  # one node: loopback
        master = [f"export MASTER_ADDR={context.master_addr}"]
    else:  # rank 0's node: its NodeAddr (node names need not resolve), as in multi_node.sbatch.j2
        master = ['head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
                  'node_addr=$(scontrol show node "$head_node" | grep -o "NodeAddr=[^ ]*" | head -n 1)',
                  'export MASTER_ADDR="${node_addr#NodeAddr=}"',
                  'if [ -z "$MASTER_ADDR" ]; then export MASTER_ADDR="$head_node"; fi']
    return {
        "job_name": context.job_name, "partition": context.partition, "nodes": context.nodes,
        "ntasks_per_node": context.ntasks_per_node, "cpus_per_task": context.cpus_per_task,
        "setup": [*context.setup, *master],
        "srun_args": ["--kill-on-bad-exit=1", f"--wait={context.srun_wait}",
                      f"--cpus-per-task={context.cpus_per_task}"],
        "additional_parameters": sbatch,
    }


def _queue_slurm(prepared: Sequence[_Prepared], array: bool) -> list[JobHandle]:
    import submitit

    contexts = [p.context for p in prepared if p.context is not None]
    first = prepared[0]
    params = slurm_parameters(contexts[0])
    for other in contexts[1:]:
        if slurm_parameters(other) | {"job_name": params["job_name"]} != params:
            raise ConfigError("the elements of a sweep need the same resources",
                              hint="sweep over hyperparameters only; submit other shapes separately")
    folder = first.job_dir / SUBMITIT_DIR
    python = _shell_word(first.cfg.launcher.python or sys.executable)
    executor = submitit.SlurmExecutor(folder=folder, python=python)
    executor.update_parameters(**params)
    tasks = [RankTask(job_dir=str(p.job_dir)) for p in prepared]
    try:
        if array and len(tasks) > 1:
            with executor.batch():
                jobs = [executor.submit(task) for task in tasks]
        else:
            jobs = [executor.submit(task) for task in tasks]
    except Exception as exc:  # submitit raises its own errors around sbatch's message
        message = str(exc).strip() or type(exc).__name__
        for p in prepared:
            (p.job_dir / SUBMIT_ERROR_FILE).write_text(message + "\n", encoding="utf-8")
        details = prepared[0].job_dir / SUBMIT_ERROR_FILE
        raise SlurmError(f"sbatch refused the job: {message.splitlines()[-1]}",
                         hint=f"the message is Slurm's own; details in {details}") from None
    handles = []
    for p, job in zip(prepared, jobs, strict=True):
        job_id = str(job.job_id)
        (p.job_dir / JOB_ID_FILE).write_text(job_id + "\n", encoding="utf-8")
        batch_log = p.job_dir / LOG_DIR / f"slurm-{job_id}.out"
        with contextlib.suppress(OSError):  # submitit's batch log, under orch's name
            batch_log.symlink_to(Path("..") / SUBMITIT_DIR / f"{job_id}_0_log.out")
        handles.append(JobHandle(job_id=job_id, job_dir=p.job_dir, executor="slurm", submitit_job=job))
    return handles


def _queue_local(prepared: Sequence[_Prepared]) -> list[JobHandle]:
    import submitit

    handles = []
    for p in prepared:
        executor = submitit.LocalExecutor(folder=p.job_dir / SUBMITIT_DIR)
        timeout = 24 * 60 if p.cfg.time in (None, "UNLIMITED") else _minutes(p.cfg.time)
        executor.update_parameters(timeout_min=timeout, tasks_per_node=1, nodes=1)
        job = executor.submit(LocalTask(job_dir=str(p.job_dir), nproc=p.cfg.tasks_per_node))
        handles.append(JobHandle(job_id=str(job.job_id), job_dir=p.job_dir, executor="local",
                                 submitit_job=job))
    return handles


def _minutes(time_text: str) -> int:
    from orchestrator.units import parse_time

    seconds = parse_time(time_text)
    return 24 * 60 if seconds is None else max(1, -(-seconds // 60))


def _shell_word(path: str) -> str:
    import shlex

    return shlex.quote(path)
