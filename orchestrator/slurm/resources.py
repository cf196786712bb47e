"""The resources of a submission (pure): GPUs, tasks and CPUs per node, memory and the time limit.

Each value comes from the command line, then the job's ``resources``, then cluster.yaml's defaults,
and is checked against the partition before anything runs: every refusal is a ConfigError naming
the flag and the fix. :mod:`orchestrator.slurm.plan` calls these while it builds a SubmitPlan.
"""

from __future__ import annotations

import math
from typing import Protocol

from orchestrator.errors import ConfigError
from orchestrator.spec.bounds import BOUNDS
from orchestrator.spec.cluster import Cluster, Partition
from orchestrator.spec.script import ScriptTarget
from orchestrator.spec.units import format_time, parse_mem_mb, parse_time

__all__ = ["Asked", "check_gpus", "check_nodes", "cpus_per_task", "default_gpus", "gpu_layout", "gpu_spec",
           "memory", "resources_line", "time_limit"]


class Asked(Protocol):
    """The flags of a request that decide its GPUs (``plan.SubmitRequest`` is one)."""

    @property
    def gpus(self) -> int | None: ...
    @property
    def ntasks_per_node(self) -> int | None: ...
    @property
    def gpus_per_task(self) -> int | None: ...
    @property
    def script(self) -> object | None: ...


def default_gpus(request: Asked, job_gpus: int, partition: Partition) -> tuple[int, int | None, str | None]:
    """(GPUs per node, tasks per node asked for, why when orch chose them) (pure).

    A job file keeps its own ``resources``. A script without ``--gpus`` gets what sbatch and torchrun
    users expect: every GPU of the partition's nodes (``--ntasks-per-node T``: T tasks of
    ``--gpus-per-task`` GPUs each); on a partition without GPUs, one CPU task per node unless
    ``--ntasks-per-node`` says more (torchrun's own default is one process per node).
    """
    asked = request.ntasks_per_node
    if request.gpus is not None or request.script is None:
        return (request.gpus if request.gpus is not None else job_gpus), asked, None
    limit = partition.gpus_per_node
    if limit == 0:
        if asked is not None:
            return 0, asked, None
        return 0, 1, (f"partition {partition.name} has no GPUs: one CPU task per node; "
                      "--ntasks-per-node N to change")
    if asked is not None:  # T ranks of K GPUs each (K = --gpus-per-task, default 1)
        per_task = request.gpus_per_task or 1
        return asked * per_task, asked, (f"{per_task} per task of --ntasks-per-node {asked}; --gpus N to change")
    return limit, None, f"all of partition {partition.name}'s; --gpus N to change"


def launch_layout(script: ScriptTarget | None, tasks: int, per_task: int, gpus: int,
                  asked_per_task: int | None) -> tuple[ScriptTarget | None, int, int]:
    """A per-node script (``orchestrator.spec.launch``) runs as one task per node that holds every GPU of the
    node and starts the node's processes itself: (the script with its processes per node, tasks per node,
    GPUs per task). Other styles keep the layout."""
    if script is None or script.launch.style != "per-node":
        return script, tasks, per_task
    if asked_per_task is not None and asked_per_task != gpus:
        raise ConfigError(f"--gpus-per-task {asked_per_task}: a per-node script's one task per node holds all "
                          f"{gpus} GPUs of its node", hint="leave out --gpus-per-task (or --launch env for one task "
                                                           "per GPU)")
    procs = tasks * per_task if gpus else tasks
    launch = script.launch.model_copy(update={"procs_per_task": procs})
    return script.model_copy(update={"launch": launch}), 1, gpus or 1


def resources_line(nodes: int, gpus: int, tasks: int, why: str | None) -> str | None:
    """``2 nodes x 8 GPUs (all of partition gpu's; --gpus N to change)`` when orch chose the GPUs, else None."""
    if why is None:
        return None
    each = f"{gpus} GPU{'s' if gpus != 1 else ''}" if gpus else f"{tasks} CPU task{'s' if tasks != 1 else ''}"
    return f"{nodes} node{'s' if nodes != 1 else ''} x {each} ({why})"


def check_nodes(nodes: int, available: int, partition: Partition) -> None:
    if nodes > available:
        raise ConfigError(
            f"--nodes {nodes} exceeds the {available} node(s) of partition {partition.name}",
            hint=f"use --nodes {available} or fewer, or another partition (--partition)",
        )


def check_gpus(nodes: int, gpus: int, partition: Partition) -> None:
    limit = partition.gpus_per_node
    if gpus <= limit:
        return
    if limit == 0:
        hint = f"use --gpus 0 --ntasks-per-node N on partition {partition.name}, or a GPU partition"
    else:
        hint = f"use --gpus {limit} and --nodes {math.ceil(nodes * gpus / limit)}"
    raise ConfigError(f"--gpus {gpus} exceeds gpus_per_node={limit} of partition {partition.name}",
                      hint=hint)


def gpu_layout(tasks: int | None, per_task: int | None, gpus: int, *, script: bool) -> tuple[int, int]:
    """(tasks per node, GPUs per task) from --ntasks-per-node, --gpus-per-task and --gpus (per node).

    Every GPU of the node belongs to exactly one task: ``tasks x per_task == gpus``. Several GPUs per
    task are for scripts (model parallel); the built-in DDP entrypoint trains on one GPU per rank.
    """
    if gpus == 0:
        if per_task is not None:
            raise ConfigError(f"--gpus-per-task {per_task} without GPUs (--gpus 0)",
                              hint="leave out --gpus-per-task on CPU partitions, or ask for --gpus")
        if tasks is None:
            raise ConfigError("--gpus 0: orch cannot derive the number of tasks per node from the GPUs",
                              hint="use --ntasks-per-node N (tasks per node, each a CPU rank)")
        return tasks, 1
    if per_task is not None:
        if gpus % per_task:
            fits = ", ".join(str(k) for k in range(1, gpus + 1) if gpus % k == 0)
            raise ConfigError(f"--gpus {gpus} is not a multiple of --gpus-per-task {per_task}: GPUs would idle",
                              hint=f"use --gpus-per-task with one of {fits}, or --gpus a multiple of {per_task}")
        if tasks is not None and tasks * per_task != gpus:
            raise ConfigError(f"--ntasks-per-node {tasks} x --gpus-per-task {per_task} is not --gpus {gpus}",
                              hint=f"leave out --ntasks-per-node (it is --gpus / --gpus-per-task = {gpus // per_task})")
    elif tasks is not None:
        if tasks > gpus:
            raise ConfigError(f"--ntasks-per-node {tasks} exceeds --gpus {gpus}: orch runs one task per GPU",
                              hint=f"use --ntasks-per-node {gpus} or fewer, or leave it out")
        if gpus % tasks:
            raise ConfigError(f"--gpus {gpus} cannot be shared evenly by --ntasks-per-node {tasks}",
                              hint=f"use --ntasks-per-node {gpus} (one GPU per task), or --gpus a multiple of {tasks}")
        per_task = gpus // tasks
    per_task = per_task or 1
    if per_task > 1 and not script:
        raise ConfigError(
            f"{per_task} GPUs per task (--gpus {gpus} over {gpus // per_task} task(s) per node): the built-in DDP "
            "entrypoint trains on one GPU per rank, so the others would idle",
            hint=f"leave out --gpus-per-task/--ntasks-per-node (one task per GPU), or run your own script: "
                 f"orch submit train.py --gpus {gpus} --gpus-per-task {per_task}")
    return gpus // per_task, per_task


def cpus_per_task(requested: int | None, tasks: int, partition: Partition, gpus_per_task: int = 0) -> int:
    """CPUs per task: asked for, else the CPU share of the GPUs the task holds (of the node on CPU jobs)."""
    limit = partition.cpus_per_node
    if gpus_per_task and partition.gpus_per_node:
        default = limit * gpus_per_task // partition.gpus_per_node
    else:
        default = limit // tasks
    cpus = requested or max(1, default)
    if cpus * tasks > limit:
        fits = limit // tasks
        fix = (f"use --cpus-per-task {fits} or fewer" if fits else
               f"use --ntasks-per-node {limit} or fewer")
        raise ConfigError(
            f"{cpus} CPUs per task x {tasks} tasks per node = {cpus * tasks} CPUs exceeds "
            f"cpus_per_node={limit} of partition {partition.name}",
            hint=fix + " (--cpus-per-task, the job's resources.cpus_per_task or defaults.cpus_per_task)",
        )
    return cpus


def time_limit(asked: str | None, default: str, partition: Partition, preempt_before: int) -> str:
    """The time limit: asked for (--time, else the job's), else defaults.time capped at max_time."""
    value = asked or default
    try:
        seconds = parse_time(value)
    except ValueError as exc:
        raise ConfigError(f"--time: {exc}", hint="use e.g. --time 04:00:00 or --time 1-12:00:00") from None
    problem = BOUNDS["time_limit"].problem(seconds) if seconds is not None else None
    if problem is not None:
        raise ConfigError(f"--time {value} is {seconds} s: it {problem}",
                          hint="use e.g. --time 04:00:00 or --time 1-12:00:00, or UNLIMITED when the partition "
                               "allows it")
    limit = partition.max_time_seconds
    if asked is None and limit is not None and (seconds is None or seconds > limit):
        seconds = limit
    elif limit is not None and (seconds is None or seconds > limit):
        raise ConfigError(
            f"--time {value} exceeds max_time={partition.max_time} of partition {partition.name}",
            hint=f"use --time {partition.max_time} or less, or a partition with a longer limit",
        )
    if seconds is None:
        return "UNLIMITED"
    if seconds <= preempt_before:
        raise ConfigError(
            f"--time {value} is not longer than launcher.preempt_before={preempt_before} s: the "
            "preemption signal would fire at once and the job would requeue itself forever",
            hint=f"use a --time above {format_time(preempt_before)} or lower launcher.preempt_before",
        )
    return format_time(seconds)


def memory(cluster: Cluster, partition: Partition, gpus: int,
            cpus_per_node: int) -> tuple[int | None, int | None]:
    """(--mem-per-gpu MB, --mem MB): per GPU on GPU jobs, else the CPU share of the node's memory."""
    total = partition.mem_mb
    if gpus:
        wanted = cluster.defaults.mem_per_gpu
        per_gpu = parse_mem_mb(wanted) if wanted is not None else total // partition.gpus_per_node
        if per_gpu * gpus > total:
            raise ConfigError(
                f"defaults.mem_per_gpu={wanted} x {gpus} GPUs exceeds mem_per_node={partition.mem_per_node} "
                f"of partition {partition.name}",
                hint=f"set defaults.mem_per_gpu to {total // gpus}M or less, or leave it null",
            )
        return (per_gpu or None), None
    share = total * cpus_per_node // partition.cpus_per_node
    return None, (share or None)


def gpu_spec(gpus: int, partition: Partition) -> str:
    if not gpus:
        return ""
    return f"{partition.gpu_type}:{gpus}" if partition.gpu_type else str(gpus)
