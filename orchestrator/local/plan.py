"""Plan a local run (``orch run``, the Python API's local mode): job + overrides -> ``job.json``.

The local twin of :func:`orchestrator.slurm.plan.build_plan`: :func:`build_local_config` is pure (the caller
passes the CPUs, the time and the folder); :func:`new_local_run` is the edge that looks those up
(this process's CPU affinity, a timezone-aware now, a new folder from :mod:`orchestrator.records.jobdirs`)
and writes ``job.json``. Both callers go through it, so their ``job.json`` files cannot drift.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from orchestrator.env.netifs import unselected
from orchestrator.errors import ConfigError
from orchestrator.records.jobcreate import create_job_dir, filling, write_config
from orchestrator.records.joblayout import job_dir_path
from orchestrator.spec.cluster import Cluster, Launcher
from orchestrator.spec.datadir import DATA_DIR_ENV_VAR
from orchestrator.spec.framework import check_layout, with_environment
from orchestrator.spec.job import LoadedJob, make_params
from orchestrator.spec.numbers import LOCAL_RANKS_PER_CPU, MAX_LOCAL_RANKS, MIN_LOCAL_RANK_LIMIT, max_local_ranks
from orchestrator.spec.runconfig import RunConfig
from orchestrator.spec.script import ScriptTarget
from orchestrator.spec.tracking import merge_tracking
from orchestrator.spec.umask import script_umask

logger = logging.getLogger(__name__)


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask; all CPUs where that is unknown)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def check_nproc(nproc: int, cpus: int | None = None) -> None:
    """``--nproc`` within 1 .. :func:`orchestrator.spec.numbers.max_local_ranks` of this machine (ConfigError),
    checked before a single process starts."""
    limit = max_local_ranks(available_cpus() if cpus is None else cpus)
    if nproc < 1:
        raise ConfigError(f"--nproc {nproc} must be at least 1", hint="e.g. --nproc 2")
    if nproc > limit:
        shown = str(nproc) if nproc < 10**12 else f"{str(nproc)[:12]}... ({len(str(nproc))} digits)"
        raise ConfigError(f"--nproc {shown} is more than this machine can run: at most {limit} local processes "
                          f"({LOCAL_RANKS_PER_CPU} per CPU core, at least {MIN_LOCAL_RANK_LIMIT}, at most "
                          f"{MAX_LOCAL_RANKS})", hint="more ranks than that belong on a cluster: orch submit")


def check_resumed(cfg: RunConfig, path: Path, cpus: int | None = None) -> None:
    """``orch run --resume``: job.json's ranks within what ``orch run`` would start here (the Slurm-wide
    bounds are RunConfig's own, checked when job.json is read), before a single process starts."""
    limit = max_local_ranks(available_cpus() if cpus is None else cpus)
    if cfg.tasks_per_node > limit:
        raise ConfigError(f"{path}: tasks_per_node {cfg.tasks_per_node} is more local processes than orch run "
                          f"starts on this machine (at most {limit})",
                          hint="the folder's job.json was edited by hand; resume with --nproc N, or start a new run")


def local_interfaces() -> list[str] | None:
    """This machine's network interfaces by name; None where the system cannot list them."""
    try:
        return [name for _, name in socket.if_nameindex()]
    except OSError:
        return None


def say_left_out(left_out: Mapping[str, str], interfaces: Collection[str]) -> None:
    """One warning for each of the cluster's ``env`` variables a local run leaves out: a socket-interface variable
    (NCCL_SOCKET_IFNAME: ib0) that selects none of this machine's ``interfaces`` would stop NCCL or gloo at their
    first contact, where the local ranks meet on 127.0.0.1 anyway (``orchestrator.env.netifs``)."""
    for name, value in left_out.items():
        logger.warning("cluster.yaml env %s=%s selects none of this machine's network interfaces (%s): left out of "
                       "this local run, whose ranks meet on 127.0.0.1 (the cluster's tasks still get it)",
                       name, value, ", ".join(interfaces))


def cpus_per_rank(cpus: int, nproc: int) -> int:
    return max(1, cpus // nproc)


def local_gpus(environ: Mapping[str, str], driver_dir: Path | None = None) -> int:
    """The GPUs a local run may use: CUDA_VISIBLE_DEVICES when set, else the driver's GPUs (no torch,
    no subprocess: the CLI path stays light; ``orchestrator.env.devices.visible_gpus``)."""
    from orchestrator.env.devices import NVIDIA_GPUS_DIR, visible_gpus

    return visible_gpus(environ, NVIDIA_GPUS_DIR if driver_dir is None else driver_dir)


def local_gpu_layout(nproc: int | None, gpus_per_task: int, gpus: int) -> int:
    """``orch run [SCRIPT] --gpus-per-task K``: the ranks (each holding K of this machine's ``gpus``), pure.

    As on Slurm, every GPU belongs to exactly one rank: K must divide the local GPUs, and ``--nproc``
    (default: gpus / K) must be gpus / K. Narrow the GPUs with CUDA_VISIBLE_DEVICES to use fewer.
    """
    k = gpus_per_task
    if k < 1:
        raise ConfigError(f"--gpus-per-task {k} must be at least 1", hint="e.g. --gpus-per-task 2")
    if gpus == 0:
        raise ConfigError(f"--gpus-per-task {k}: this machine shows no GPUs (CUDA_VISIBLE_DEVICES and the "
                          "NVIDIA driver name none)", hint="leave out --gpus-per-task for CPU ranks (--nproc N)")
    if gpus % k:
        fits = ", ".join(str(n) for n in range(1, gpus + 1) if gpus % n == 0)
        raise ConfigError(f"--gpus-per-task {k} does not divide the {gpus} local GPU(s): GPUs would idle",
                          hint=f"use --gpus-per-task with one of {fits}, or set CUDA_VISIBLE_DEVICES to a "
                               f"multiple of {k} GPUs")
    if nproc is not None and nproc * k != gpus:
        raise ConfigError(f"--nproc {nproc} x --gpus-per-task {k} is not the {gpus} local GPU(s)",
                          hint=f"leave out --nproc (it is {gpus // k}), or set CUDA_VISIBLE_DEVICES to "
                               f"{nproc * k} GPUs")
    return gpus // k


def build_local_config(loaded: LoadedJob, overrides: Mapping[str, Any], *, nproc: int, job_dir: Path,
                       now: datetime, cpus: int, data_dir: str | None = None, job_name: str | None = None,
                       cluster: Cluster | None = None, script: ScriptTarget | None = None,
                       gpus_per_task: int | None = None, gpus: int = 0,
                       tracking: Sequence[str] = (), env_left_out: Collection[str] = ()) -> RunConfig:
    """``job.json`` of a local run with ``nproc`` ranks (pure). ConfigError names the field and the fix.

    ``gpus_per_task`` (scripts only): each rank holds that many of the ``gpus`` local GPUs. ``env_left_out``: the
    cluster's ``env`` variables this machine cannot honour (``orchestrator.env.netifs.unselected``)."""
    check_nproc(nproc, cpus)
    if loaded.spec.needs_data and data_dir is None:
        fetch = f", or let orch get it: orch run {loaded.spec.name} --download" if loaded.spec.download else ""
        raise ConfigError(f"job {loaded.spec.name} needs a data directory, and none was given",
                          hint=f"pass --data-dir DIR (data_dir= in Python) or set {DATA_DIR_ENV_VAR}=DIR{fetch}")
    if gpus_per_task is not None:
        if script is None and gpus_per_task > 1:
            raise ConfigError(f"--gpus-per-task {gpus_per_task}: the built-in DDP entrypoint trains on one GPU "
                              "per rank", hint="leave out --gpus-per-task, or run your own script: "
                                               f"orch run train.py --gpus-per-task {gpus_per_task}")
        local_gpu_layout(nproc, gpus_per_task, gpus)
    tasks = nproc
    if script is not None and script.frameworks:  # Trainer(devices=, num_nodes=) vs --nproc
        check_layout(script.frameworks, style=script.launch.style, nodes=1, tasks_per_node=nproc,
                     gpus=gpus if gpus_per_task is not None else 0, per_task=gpus_per_task or 1, command="orch run")
        script = script.model_copy(update={"frameworks": with_environment(
            script.frameworks, style=script.launch.style, srun=False, job_name=None)})
    if script is not None and script.launch.style == "per-node":  # one process: the script starts nproc itself
        if gpus_per_task is not None:
            raise ConfigError(f"--gpus-per-task {gpus_per_task}: a per-node script's one process holds every GPU "
                              "of this machine", hint="leave out --gpus-per-task (or --launch env for one rank "
                                                      "per GPU)")
        script = script.model_copy(update={"launch": script.launch.model_copy(update={"procs_per_task": nproc})})
        tasks = 1
    params = make_params(loaded.spec, overrides).model_dump(mode="json") if script is None else {}
    name = job_name or loaded.spec.name
    return RunConfig(
        mode="local", job_name=name, job_file=str(loaded.path) if script is None else script.target, params=params,
        script=script,
        nodes=1, gpus_per_node=gpus if gpus_per_task is not None else 0, tasks_per_node=tasks,
        gpus_per_task=gpus_per_task or 1, cpus_per_task=cpus_per_rank(cpus, nproc),
        data_dir=data_dir, job_dir=str(job_dir), cluster_name=cluster.name if cluster else None,
        launcher=cluster.launcher if cluster else Launcher(),
        env={k: v for k, v in cluster.env.items() if k not in env_left_out} if cluster else {},
        created=now.isoformat(timespec="seconds"),
        tracking=merge_tracking(cluster.tracking if cluster else (), tracking),
        umask=script_umask(cluster.launcher.umask if cluster else None),
    )


def new_local_run(loaded: LoadedJob, overrides: Mapping[str, Any], *, nproc: int, root: Path,
                  data_dir: str | None = None, job_name: str | None = None,
                  cluster: Cluster | None = None, script: ScriptTarget | None = None,
                  gpus_per_task: int | None = None, gpus: int = 0,
                  tracking: Sequence[str] = ()) -> tuple[Path, RunConfig]:
    """Validate, then create the job folder under ``root`` and write its ``job.json``."""
    now = datetime.now(timezone.utc)  # folder names and records in UTC, whatever TZ says
    name = job_name or loaded.spec.name
    job_dir = job_dir_path(root, name, now, secrets.token_hex(3))
    interfaces = local_interfaces()
    left_out = unselected(cluster.env, interfaces) if cluster is not None and interfaces else {}
    cfg = build_local_config(loaded, overrides, nproc=nproc, job_dir=job_dir, now=now, cpus=available_cpus(),
                             data_dir=data_dir, job_name=name, cluster=cluster, script=script,
                             gpus_per_task=gpus_per_task, gpus=gpus, tracking=tracking, env_left_out=left_out)
    say_left_out(left_out, interfaces or ())  # once the run is valid: a refused one says only why
    create_job_dir(job_dir)
    with filling(job_dir):  # no space left, ...: no half-written folder stays behind
        write_config(job_dir, cfg)
    return job_dir, cfg
