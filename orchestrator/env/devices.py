"""Which device and backend a rank uses, and the duplicate (host, device) check (pure, no torch).

The caller passes what torch reports (``cuda_available``, ``device_count``) and the raw
``CUDA_VISIBLE_DEVICES``; the functions here decide. Rules, in order:

| GPUs the task sees            | device                      |
| ----------------------------- | --------------------------- |
| none (or no CUDA)             | CPU, gloo                   |
| exactly one                   | that one (``cuda:0``), NCCL |
| at least the node's ranks     | ``cuda:<local_rank>``, NCCL |
| more than one, fewer than that| error: ranks would share    |

``torch.cuda.device_count()`` already honours ``CUDA_VISIBLE_DEVICES``; the variable is used only
to name the physical device (``CUDA_VISIBLE_DEVICES=2,3`` and index 1 is physical GPU ``3``),
which is what two ranks on one host must never share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from orchestrator.errors import DistEnvError

VISIBLE_VAR = "CUDA_VISIBLE_DEVICES"
NODE_NAME_VARS = ("SLURMD_NODENAME",)  # the task's node as Slurm names it (hostname can lie)
NVIDIA_GPUS_DIR = Path("/proc/driver/nvidia/gpus")  # one entry per GPU the driver knows
NVIDIA_DEVICE = Path("/dev/nvidiactl")  # present where an NVIDIA driver is loaded


@dataclass(frozen=True)
class DeviceChoice:
    kind: Literal["cpu", "cuda"]
    index: int | None  # index among the visible devices (what torch uses)
    physical: str | None  # the physical device id (from CUDA_VISIBLE_DEVICES), for the duplicate check
    backend: Literal["gloo", "nccl"]

    @property
    def name(self) -> str:
        return "cpu" if self.kind == "cpu" else f"cuda:{self.index}"

    def describe(self) -> str:
        if self.kind == "cpu":
            return "cpu (gloo)"
        return f"cuda:{self.index} (physical GPU {self.physical}, nccl)"


CPU = DeviceChoice(kind="cpu", index=None, physical=None, backend="gloo")


def parse_visible_devices(value: str | None) -> list[str] | None:
    """``CUDA_VISIBLE_DEVICES`` as a list of ids; ``None`` when unset (every device is visible)."""
    if value is None:
        return None
    ids = [part.strip() for part in value.split(",")]
    return [i for i in ids if i and i != "-1"]


def visible_gpus(environ: Mapping[str, str], driver_dir: Path = NVIDIA_GPUS_DIR) -> int:
    """The GPUs a process with ``environ`` may use, without torch: CUDA_VISIBLE_DEVICES when set (empty:
    none), else the NVIDIA driver's GPUs (reads a directory; no process is run)."""
    ids = parse_visible_devices(environ.get(VISIBLE_VAR))
    if ids is not None:
        return len(ids)
    try:
        return sum(1 for _ in driver_dir.iterdir())
    except OSError:
        return 0


def task_has_gpu(environ: Mapping[str, str], *, slurm_gpus: int | None, has_nvidia: bool) -> bool:
    """Whether a script's task can use a GPU, without torch: a Slurm job asked for GPUs
    (``slurm_gpus``; None: a local run), the task sees one (CUDA_VISIBLE_DEVICES, else the driver's) and
    an NVIDIA driver is loaded (a node whose Slurm announces GPUs the machine lacks has none)."""
    if slurm_gpus == 0 or not has_nvidia:
        return False
    return visible_gpus(environ) > 0


def select_device(*, cuda_available: bool, device_count: int, visible: str | None, rank: int,
                  local_rank: int, local_world_size: int) -> DeviceChoice:
    """Pick this rank's device following the table in the module docstring."""
    if not cuda_available or device_count <= 0:
        return CPU
    if device_count == 1:
        index = 0
    elif device_count >= local_world_size:
        index = local_rank
    else:
        raise DistEnvError(
            f"rank {rank} (local rank {local_rank} of {local_world_size} on this node) sees "
            f"{device_count} GPUs ({VISIBLE_VAR}={visible if visible is not None else '<unset>'}): "
            "fewer GPUs than ranks on the node, so ranks would share a GPU",
            hint="give every task its own GPU: request as many GPUs per node as tasks per node "
                 "(orch submit --gpus N), or let each task see exactly one GPU (srun --gpus-per-task=1)",
        )
    ids = parse_visible_devices(visible)
    physical = ids[index] if ids is not None and len(ids) >= device_count else str(index)
    return DeviceChoice(kind="cuda", index=index, physical=physical, backend="nccl")


def host_name(environ: Mapping[str, str], fallback: str) -> str:
    """The node a task runs on: Slurm's node name when set (every task's hostname may be the same)."""
    for var in NODE_NAME_VARS:
        if environ.get(var):
            return environ[var]
    return fallback


def find_shared_devices(placements: Sequence[tuple[str, str | None]]) -> dict[tuple[str, str], list[int]]:
    """``placements[rank] = (host, physical device or None)`` -> the (host, device) pairs used twice."""
    seen: dict[tuple[str, str], list[int]] = {}
    for rank, (host, device) in enumerate(placements):
        if device is not None:
            seen.setdefault((host, device), []).append(rank)
    return {key: ranks for key, ranks in seen.items() if len(ranks) > 1}


def shared_devices_message(shared: Mapping[tuple[str, str], list[int]]) -> str:
    parts = [f"ranks {', '.join(map(str, ranks))} all use GPU {device} on {host}"
             for (host, device), ranks in sorted(shared.items())]
    return "two ranks share a GPU: " + "; ".join(parts)


def check_unique_devices(placements: Sequence[tuple[str, str | None]]) -> None:
    """Raise a clear error (instead of NCCL's "invalid usage") when two ranks share a GPU."""
    shared = find_shared_devices(placements)
    if shared:
        raise DistEnvError(
            shared_devices_message(shared),
            hint="each task must see a different GPU: use --gpus-per-node equal to the tasks per node "
                 "and do not set CUDA_VISIBLE_DEVICES yourself",
        )


def num_threads(requested: int | None, cpus_per_task: int) -> int:
    """torch threads per rank: the job's ``num_threads`` when set, else the CPUs of the task."""
    return max(1, requested if requested is not None else cpus_per_task)


# --- scripts (bring your own): which GPUs a task gets, before torch is imported -------------------
#
# | GPUs per task (K) | CUDA_VISIBLE_DEVICES of the task       | device bound before the script |
# | ----------------- | -------------------------------------- | ------------------------------ |
# | 1                 | as inherited (all the node's GPUs)     | cuda:LOCAL_RANK (as above)     |
# | K > 1             | its K ids: entries LOCAL_RANK*K .. +K  | cuda:0 (the first of its K)    |
#
# With K = 1 nothing is narrowed, so torchrun-style code that uses ``cuda:LOCAL_RANK`` keeps
# working. Ids come from the inherited CUDA_VISIBLE_DEVICES (Slurm's GPUs, or the user's), else
# 0..node_gpus-1.
#
# Why the launcher narrows CUDA_VISIBLE_DEVICES instead of using Slurm's --gpus-per-task + GPU
# binding (Slurm 22.05+): the allocation stays --gpus-per-node=G --ntasks-per-node=G/K, which all
# releases read alike (--gpus-per-task next to per-node GPU requests changed meaning across them);
# Slurm's per-task binding under ConstrainDevices can hide the node's other GPUs from a task's
# cgroup, which stops CUDA peer-to-peer (NVLink) between the tasks NCCL connects, while this only
# renumbers what one process sees; and one table serves orch run and Slurm, tested without GPUs.


def task_gpu_indices(local_rank: int, gpus_per_task: int) -> list[int]:
    """Indices (into the node's visible GPUs) of the K GPUs of local rank ``local_rank``."""
    return list(range(local_rank * gpus_per_task, (local_rank + 1) * gpus_per_task))


def narrowed_visible(visible: str | None, *, local_rank: int, gpus_per_task: int, node_gpus: int) -> str | None:
    """The task's CUDA_VISIBLE_DEVICES for K > 1 (None: leave it as it is)."""
    if gpus_per_task <= 1:
        return None
    ids = parse_visible_devices(visible)
    if ids is None:
        ids = [str(i) for i in range(node_gpus)]
    if len(ids) == gpus_per_task:  # the site's binding already gave this task exactly its K GPUs
        return ",".join(ids)
    wanted = task_gpu_indices(local_rank, gpus_per_task)
    if wanted[-1] >= len(ids):
        raise DistEnvError(
            f"local rank {local_rank} needs GPUs {wanted[0]}-{wanted[-1]} of this node ({gpus_per_task} per task), "
            f"but {VISIBLE_VAR}={visible if visible is not None else '<unset>'} shows {len(ids)}",
            hint="request gpus = tasks per node x --gpus-per-task, and do not narrow CUDA_VISIBLE_DEVICES yourself")
    return ",".join(ids[i] for i in wanted)


def script_device(*, cuda_available: bool, device_count: int, visible: str | None, rank: int, local_rank: int,
                  local_world_size: int, gpus_per_task: int) -> DeviceChoice:
    """The device a script's task is bound to (``torch.cuda.set_device``) before the script runs."""
    if gpus_per_task > 1:  # CUDA_VISIBLE_DEVICES already holds just this task's GPUs
        if cuda_available and 0 < device_count < gpus_per_task:
            raise DistEnvError(f"rank {rank} sees {device_count} GPUs but was given {gpus_per_task}",
                               hint="request gpus = tasks per node x --gpus-per-task")
        return select_device(cuda_available=cuda_available, device_count=device_count, visible=visible,
                             rank=rank, local_rank=0, local_world_size=1)
    return select_device(cuda_available=cuda_available, device_count=device_count, visible=visible,
                         rank=rank, local_rank=local_rank, local_world_size=local_world_size)
