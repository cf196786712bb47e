"""The variables a script's task gets, exported by the launcher (``launch.py``) before the script runs.

torchrun's worker variables (``env/taskenv.py``, pure), then what the script's launch style changes
(``orchestrator.spec.launch``: a per-node task is its node's launcher, a slurm-style rank gets Slurm's task
variables made its own), orch's own (the job folder, the preemption signal, torchelastic's error file in
the job folder), the trackers' ids, and with ``--gpus-per-task`` K > 1 the task's K GPUs in
CUDA_VISIBLE_DEVICES; a task with no GPU gets what ``accelerate launch --cpu`` sets
(``taskenv.CPU_RANK_VARS``). Nothing here imports torch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path

from orchestrator.env import distenv, taskenv
from orchestrator.records.joblayout import error_file_path
from orchestrator.spec.numbers import parse_int
from orchestrator.spec.runconfig import RunConfig

# Slurm's default MaxBatchRequeue: how often a preempted script job may be requeued.
SLURM_MAX_REQUEUE = 5


def export_script_environment(cfg: RunConfig, env: distenv.DistEnv, job_dir: Path,
                              environ: os._Environ[str]) -> None:
    """Scripts: the cluster's ``env``, then exactly torchrun's variables (no NODE_RANK), and with
    ``--gpus-per-task`` K > 1 this task's K GPUs in CUDA_VISIBLE_DEVICES (before torch is imported)."""
    from orchestrator.env.devices import NVIDIA_DEVICE, VISIBLE_VAR, narrowed_visible, task_has_gpu

    environ.update(cfg.env)
    for name in taskenv.ORCH_ONLY_VARS:
        environ.pop(name, None)
    requeues = SLURM_MAX_REQUEUE if cfg.mode == "slurm" and cfg.launcher.requeue else 0
    max_restarts = cfg.launcher.max_restarts + requeues
    environ.update(taskenv.script_env(
        env, restart_count=distenv.restart_count(environ, cfg.restarts), max_restarts=max_restarts,
        run_id=distenv.script_run_id(environ, job_dir.name), cpus_per_task=cfg.cpus_per_task, environ=environ))
    error_file = error_file_path(job_dir, env.rank)  # torchelastic's @record writes the script's error here
    with contextlib.suppress(OSError):  # an earlier run's (a restart, a requeue) is not this run's error
        error_file.unlink()
    environ[taskenv.ERROR_FILE_VAR] = str(error_file)  # a per-node task's style drops it (its processes' own)
    apply_launch_style(cfg, env, environ)
    environ["ORCH_JOB_DIR"] = str(job_dir)
    environ["ORCH_PREEMPT_SIGNAL"] = cfg.launcher.preempt_signal  # the script may handle it (README)
    environ.update(script_tracking_env(cfg, job_dir, rank=env.rank))
    narrowed = narrowed_visible(environ.get(VISIBLE_VAR), local_rank=env.local_rank,
                                gpus_per_task=cfg.gpus_per_task, node_gpus=cfg.gpus_per_node)
    if narrowed is not None:
        environ[VISIBLE_VAR] = narrowed
    has_gpu = task_has_gpu(environ, slurm_gpus=cfg.gpus_per_node if cfg.mode == "slurm" else None,
                           has_nvidia=NVIDIA_DEVICE.exists())
    environ.update(taskenv.cpu_rank_env(has_gpu, environ))


def current_master(env: distenv.DistEnv, environ: Mapping[str, str]) -> distenv.DistEnv:
    """``env`` with the MASTER_ADDR:MASTER_PORT the script meets at now: a warm restart's world meets at the store
    its agents agreed on (``restarts/agent.py`` sets both in the worker it forks)."""
    port = parse_int(environ.get("MASTER_PORT"), digits=5)
    return dataclasses.replace(env, master_addr=environ.get("MASTER_ADDR") or env.master_addr,
                               master_port=port if port is not None else env.master_port)


def apply_launch_style(cfg: RunConfig, env: distenv.DistEnv, environ: os._Environ[str]) -> None:
    """The variables of the script's launch style on top of torchrun's (``orchestrator.spec.launch``):
    per-node, the node's launcher's (no rank of its own); slurm, Slurm's task variables made this rank's."""
    if cfg.script is None:
        return
    launch = cfg.script.launch
    dropped, added = taskenv.STYLE_VARIABLES[launch.style](env, launch.procs_per_task)
    for name in dropped:
        environ.pop(name, None)
    environ.update(added)


def script_tracking_env(cfg: RunConfig, job_dir: Path, *, rank: int) -> dict[str, str]:
    """ORCH_RUN_ID, and the variables of the trackers the script opted into (MLflow's run id: rank 0,
    which creates the run when it is the job's first attempt)."""
    from orchestrator.records.joblayout import ARRAY_FILE
    from orchestrator.spec.tracking import group_id, run_id

    rid = run_id(job_dir)
    group = group_id(job_dir, (job_dir.parent / ARRAY_FILE).is_file())
    mlflow_id = None
    if "mlflow" in cfg.tracking and rank == 0:
        from orchestrator.task.trackers import mlflow_run_id

        mlflow_id = mlflow_run_id(job_dir=job_dir, run_id=rid, group=group, job_name=cfg.job_name)
    return taskenv.tracking_env(rid, group, cfg.tracking, mlflow_id)
