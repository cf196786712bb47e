"""The Python API's local mode (``orchestrator.submit(..., executor="local")``, no ``sbatch`` on PATH): local runs
in the background. Each run's ``job.json`` comes from :func:`orchestrator.local.plan.new_local_run`, as for
``orch run``, and submitit's local executor runs one task (:class:`LocalTask`) that starts every rank through
:class:`orchestrator.local.runner.LocalRunner`, with orch run's restarts."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.errors import ConfigError
from orchestrator.records.joblayout import job_root
from orchestrator.spec.cluster import Cluster
from orchestrator.spec.runconfig import read_run_config

if TYPE_CHECKING:
    from orchestrator.slurm.plan import SubmitRequest
    from orchestrator.spec.job import LoadedJob

SUBMITIT_DIR = "submitit"  # submitit's own files, in the job folder


@dataclass(frozen=True)
class LocalTask:
    """A whole local run in one submitit task: every rank through ``LocalRunner`` (as ``orch run``)."""

    job_dir: str
    nproc: int

    def __call__(self) -> dict[str, Any] | None:
        from orchestrator.local.restarts import run_attempts
        from orchestrator.local.runner import LocalRunner
        from orchestrator.task.forkserver import forks_ranks

        folder = Path(self.job_dir)
        cfg = read_run_config(folder)
        fork = forks_ranks(script=cfg.script is not None, nproc=self.nproc, environ=os.environ)
        outcome = run_attempts(lambda extra: LocalRunner(job_dir=folder, nproc=self.nproc, extra_env=extra, fork=fork,
                                                         preempt_signal=cfg.launcher.preempt_signal), folder, cfg)
        if outcome.exit_code != 0:
            raise RuntimeError(outcome.message)
        return outcome.result


@dataclass(frozen=True)
class Queued:
    """One local run queued: submitit's job id, the job folder, and submitit's job (its state, ``cancel``)."""

    job_id: str
    job_dir: Path
    job: Any


def queue_local(request: SubmitRequest, loaded: LoadedJob, cluster: Cluster | None,
                entries: Sequence[Mapping[str, Any]]) -> list[Queued]:
    """Local runs (as ``orch run``) of the resolved request: one per entry of hyperparameters on top of its
    overrides, every entry validated before anything runs."""
    import submitit

    from orchestrator.local.plan import local_gpu_layout, local_gpus, new_local_run
    from orchestrator.spec.job import make_params

    if request.script is not None and any(entries):
        raise ConfigError("a sweep varies a job file's parameters; a script takes its arguments in script_args",
                          hint="submit one job per argument set, or write a job file for the sweep")
    if request.script is not None and request.script.note() is not None:
        raise ConfigError(request.script.note() or "", hint="a local run needs the module on this machine")
    res = loaded.spec.resources
    gpus = request.gpus if request.gpus is not None else res.gpus
    nproc = (request.nodes or res.nodes) * max(1, gpus // (request.gpus_per_task or 1))
    local = 0
    if request.gpus_per_task is not None:  # as orch run --gpus-per-task: K of this machine's GPUs per rank
        local = local_gpus(os.environ)
        local_gpu_layout(nproc, request.gpus_per_task, local)
    planned = [{**request.overrides, **entry} for entry in entries]
    if request.script is None:
        for params in planned:  # every entry is validated before anything runs
            make_params(loaded.spec, params)
    queued = []
    for params in planned:
        job_dir, cfg = new_local_run(loaded, params, nproc=nproc, root=job_root(cluster).absolute(),
                                     data_dir=request.data_dir, job_name=request.job_name, cluster=cluster,
                                     script=request.script, gpus_per_task=request.gpus_per_task, gpus=local)
        executor = submitit.LocalExecutor(folder=job_dir / SUBMITIT_DIR)
        executor.update_parameters(timeout_min=_minutes(cfg.time), tasks_per_node=1, nodes=1)
        job = executor.submit(LocalTask(job_dir=str(job_dir), nproc=cfg.tasks_per_node))
        queued.append(Queued(job_id=str(job.job_id), job_dir=job_dir, job=job))
    return queued


def _minutes(time_text: str | None) -> int:
    """submitit's timeout of a run of ``--time`` (a day without one)."""
    from orchestrator.spec.units import parse_time

    seconds = None if time_text in (None, "UNLIMITED") else parse_time(time_text)
    return 24 * 60 if seconds is None else max(1, -(-seconds // 60))
