"""Where am I in the job? A pure function from environment variables to a ``DistEnv``.

``derive(environ)`` reads only the mapping it is given (the caller passes ``os.environ`` at the edge).
Which variable wins, highest first (every name lives in the tables below, nowhere else):

value         | launcher / torchrun style | Slurm step (srun task)    | Slurm job (fallback)
--------------|---------------------------|---------------------------|-----------------------------
rank          | RANK                      | SLURM_PROCID              |
local_rank    | LOCAL_RANK                | SLURM_LOCALID             |
node_rank     | GROUP_RANK, NODE_RANK     | SLURM_NODEID              |
world_size    | WORLD_SIZE                | SLURM_STEP_NUM_TASKS      | SLURM_NTASKS, SLURM_NPROCS
local_world.. | LOCAL_WORLD_SIZE          | SLURM_STEP_TASKS_PER_NODE | SLURM_TASKS_PER_NODE
num_nodes     | GROUP_WORLD_SIZE          | SLURM_STEP_NUM_NODES      | SLURM_JOB_NUM_NODES, SLURM_NNODES
master_addr   | MASTER_ADDR               | first host of SLURM_STEP_NODELIST, else SLURM_JOB_NODELIST
master_port   | MASTER_PORT               | master_port(SLURM_JOB_ID, SLURM_RESTART_COUNT, port_range)

(local_world_size from Slurm is this node's entry, SLURM_NODEID, of the tasks-per-node list.)

* ``RANK`` set (torchrun, or orch's launcher after exporting ``torch_env()``): the launcher-style column
  wins for all rank values, Slurm's rank variables are not read (torchrun inside srun has its own ranks).
  ``num_nodes`` without GROUP_WORLD_SIZE is WORLD_SIZE / LOCAL_WORLD_SIZE.
* Else inside a Slurm job (SLURM_JOB_ID): the task must be in an srun step; the batch script itself
  (no SLURM_STEP_ID, or the batch/extern step) is refused with "run this under srun", because its
  SLURM_PROCID=0 would make every such process rank 0.
* MASTER_ADDR / MASTER_PORT from the environment always win (orch's batch script exports them).
* Neither RANK nor SLURM_JOB_ID: DistEnvError "not launched by srun or torchrun".

Every inconsistency (ranks out of range, tasks per node not adding up to the task count, node count
not matching the node list, SLURMD_NODENAME not the node at SLURM_NODEID) raises DistEnvError naming
the variable, with a hint naming the fix.

The port formula is :mod:`orchestrator.env.masterport`'s; the other way round (a DistEnv to the variables
torchrun gives a worker, an allocation to the variables Slurm gives its tasks) is :mod:`orchestrator.env.taskenv`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from orchestrator.env.hostlist import MAX_HOSTS, HostlistError, expand_cached
from orchestrator.env.masterport import DEFAULT_PORT_RANGE, master_port
from orchestrator.errors import DistEnvError

# Slurm variables, most specific first: the step's own value wins over the job's.
SLURM_VARS: dict[str, tuple[str, ...]] = {
    "job_id": ("SLURM_JOB_ID", "SLURM_JOBID"),
    "step_id": ("SLURM_STEP_ID", "SLURM_STEPID"),
    "rank": ("SLURM_PROCID",),
    "local_rank": ("SLURM_LOCALID",),
    "node_rank": ("SLURM_NODEID",),
    "world_size": ("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"),
    "num_nodes": ("SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES", "SLURM_NNODES"),
    "nodelist": ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"),
    "tasks_per_node": ("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"),
    "node_name": ("SLURMD_NODENAME",),
    "gtids": ("SLURM_GTIDS",),
    "restart_count": ("SLURM_RESTART_COUNT",),
}
# torchrun / launcher-style variables (torch.distributed.run sets all of these).
TORCHRUN_VARS: dict[str, tuple[str, ...]] = {
    "rank": ("RANK",),
    "local_rank": ("LOCAL_RANK",),
    "world_size": ("WORLD_SIZE",),
    "local_world_size": ("LOCAL_WORLD_SIZE",),
    "node_rank": ("GROUP_RANK", "NODE_RANK"),
    "num_nodes": ("GROUP_WORLD_SIZE",),
}
MASTER_VARS: dict[str, tuple[str, ...]] = {"addr": ("MASTER_ADDR",), "port": ("MASTER_PORT",)}
# SLURM_STEP_ID values that are not an srun step: the batch script, the extern and interactive steps.
NON_TASK_STEPS = frozenset({"batch", "extern", "interactive", "4294967290", "4294967294", "4294967295"})

_SRUN_HINT = "start every task with srun inside the allocation (orch submit writes that script for you)"
_COPIED_HINT = ("these variables come from Slurm; do not set, copy or --export them by hand, "
                "and start each task with srun in the allocation")
_TPN_RE = re.compile(r"([0-9]{1,9})(?:\(x([0-9]{1,9})\))?\Z")


@dataclass(frozen=True)
class DistEnv:
    """One task's place in the job."""

    rank: int
    local_rank: int
    world_size: int
    local_world_size: int
    node_rank: int
    num_nodes: int
    master_addr: str
    master_port: int

    def as_dict(self) -> dict[str, int | str]:
        """Exactly the eight fields (the JSON of ``orch env --json``)."""
        return {
            "rank": self.rank, "local_rank": self.local_rank, "world_size": self.world_size,
            "local_world_size": self.local_world_size, "node_rank": self.node_rank,
            "num_nodes": self.num_nodes, "master_addr": self.master_addr, "master_port": self.master_port,
        }

    def torch_env(self) -> dict[str, str]:
        """The variables torch.distributed's ``env://`` init (and torchrun-style code) reads."""
        return {
            "RANK": str(self.rank), "LOCAL_RANK": str(self.local_rank),
            "WORLD_SIZE": str(self.world_size), "LOCAL_WORLD_SIZE": str(self.local_world_size),
            "NODE_RANK": str(self.node_rank), "GROUP_RANK": str(self.node_rank),
            "GROUP_WORLD_SIZE": str(self.num_nodes),
            "MASTER_ADDR": self.master_addr, "MASTER_PORT": str(self.master_port),
        }


class _Ranks(NamedTuple):
    rank: int
    local_rank: int
    world_size: int
    local_world_size: int
    node_rank: int
    num_nodes: int


def derive(environ: Mapping[str, str], *, port_range: tuple[int, int] = DEFAULT_PORT_RANGE) -> DistEnv:
    """The DistEnv of the task whose environment is ``environ`` (see the module docstring)."""
    if _lookup(environ, TORCHRUN_VARS["rank"]) is not None:
        ranks = _from_torchrun(environ)
    elif _lookup(environ, SLURM_VARS["job_id"]) is not None:
        ranks = _from_slurm(environ)
    else:
        present = [n for names in TORCHRUN_VARS.values() for n in names if n in environ]
        detail = f" ({', '.join(present)} set, but not RANK)" if present else ""
        raise DistEnvError(
            f"not launched by srun or torchrun: neither SLURM_JOB_ID nor RANK is set{detail}",
            hint="use 'orch run JOB' for a local run, 'orch submit JOB' for Slurm, "
                 "or start it with 'srun ...' inside an allocation or with torchrun")
    addr, port = _master(environ, port_range)
    return DistEnv(*ranks, master_addr=addr, master_port=port)


def _lookup(environ: Mapping[str, str], names: tuple[str, ...]) -> tuple[str, str] | None:
    """(variable name, value) of the first of ``names`` that is set, else None."""
    for name in names:
        value = environ.get(name)
        if value is not None:
            return name, value
    return None


def _need(environ: Mapping[str, str], names: tuple[str, ...], hint: str) -> tuple[str, str]:
    found = _lookup(environ, names)
    if found is None:
        raise DistEnvError(f"{' or '.join(names)} is not set", hint=hint)
    return found


def _int(environ: Mapping[str, str], names: tuple[str, ...], hint: str) -> int:
    for name in names:  # _need, inlined: three calls per rank, 8,192 ranks in a big dry run
        value = environ.get(name)
        if value is not None:
            return _parse_int(name, value, hint=hint)
    raise DistEnvError(f"{' or '.join(names)} is not set", hint=hint)


def _parse_int(name: str, value: str, *, hint: str) -> int:
    text = value.strip()
    if not (text.isascii() and text.isdigit()):
        raise DistEnvError(f"{name}={value!r} is not a non-negative integer", hint=hint)
    if len(text) > 18:  # also keeps int() below Python's int-string limit
        raise DistEnvError(f"{name}={value[:40]!r}... has {len(text)} digits, far out of range", hint=hint)
    return int(text)


def _check_below(name: str, value: int, limit_name: str, limit: int, hint: str) -> None:
    if value >= limit:
        raise DistEnvError(f"{name}={value} is out of range: {limit_name} is {limit}", hint=hint)


def _from_torchrun(environ: Mapping[str, str]) -> _Ranks:
    hint = ("torchrun sets RANK, LOCAL_RANK, WORLD_SIZE and LOCAL_WORLD_SIZE together; "
            "launch with torchrun or 'orch run', or unset a stray RANK")
    t = TORCHRUN_VARS
    rank = _int(environ, t["rank"], hint)
    local_rank = _int(environ, t["local_rank"], hint)
    world_size = _int(environ, t["world_size"], hint)
    local_world_size = _int(environ, t["local_world_size"], hint)
    if world_size < 1 or local_world_size < 1:
        raise DistEnvError(f"WORLD_SIZE={world_size} and LOCAL_WORLD_SIZE={local_world_size} must be >= 1",
                           hint=hint)
    _check_below("RANK", rank, "WORLD_SIZE", world_size, hint)
    _check_below("LOCAL_RANK", local_rank, "LOCAL_WORLD_SIZE", local_world_size, hint)
    if local_world_size > world_size:
        raise DistEnvError(f"LOCAL_WORLD_SIZE={local_world_size} is larger than WORLD_SIZE={world_size}",
                           hint=hint)
    if _lookup(environ, t["num_nodes"]) is not None:
        num_nodes = _int(environ, t["num_nodes"], hint)
    elif world_size % local_world_size == 0:
        num_nodes = world_size // local_world_size
    else:
        raise DistEnvError(
            f"WORLD_SIZE={world_size} is not a multiple of LOCAL_WORLD_SIZE={local_world_size} "
            "and GROUP_WORLD_SIZE (the node count) is not set", hint="set GROUP_WORLD_SIZE")
    found = _lookup(environ, t["node_rank"])
    node_rank = _parse_int(*found, hint=hint) if found else rank // local_world_size
    _check_below(found[0] if found else "node rank (RANK // LOCAL_WORLD_SIZE)", node_rank,
                 "the node count", num_nodes, hint)
    return _Ranks(rank, local_rank, world_size, local_world_size, node_rank, num_nodes)


def _from_slurm(environ: Mapping[str, str]) -> _Ranks:
    s = SLURM_VARS
    job = _lookup(environ, s["job_id"])
    step = _lookup(environ, s["step_id"])
    if step is None or step[1].strip() in NON_TASK_STEPS:
        where = "the batch script" if step is None else f"step {step[1]!r}"
        raise DistEnvError(
            f"inside Slurm job {job[1] if job else '?'} but not in an srun step ({where}): "
            "SLURM_PROCID there is 0 for the whole job",
            hint=f"run this under srun, e.g. 'srun orch env'; {_SRUN_HINT}")
    rank = _int(environ, s["rank"], _SRUN_HINT)
    local_rank = _int(environ, s["local_rank"], _SRUN_HINT)
    node_rank = _int(environ, s["node_rank"], _SRUN_HINT)
    world_var, world_text = _need(environ, s["world_size"], _SRUN_HINT)
    world_size = _parse_int(world_var, world_text, hint=_COPIED_HINT)
    num_nodes_var, num_nodes_text = _need(environ, s["num_nodes"], _SRUN_HINT)
    num_nodes = _parse_int(num_nodes_var, num_nodes_text, hint=_COPIED_HINT)
    nodelist = _need(environ, s["nodelist"], _SRUN_HINT)
    tasks = _need(environ, s["tasks_per_node"], _SRUN_HINT)
    hosts, per_node, total_tasks = _layout(nodelist, tasks)
    if len(hosts) != num_nodes:
        raise DistEnvError(f"{num_nodes_var}={num_nodes} but {nodelist[0]}={nodelist[1]} has "
                           f"{len(hosts)} hosts", hint=_COPIED_HINT)
    if len(per_node) != num_nodes:
        raise DistEnvError(f"{tasks[0]}={tasks[1]} lists {len(per_node)} nodes but "
                           f"{num_nodes_var}={num_nodes}", hint=_COPIED_HINT)
    if total_tasks != world_size:
        raise DistEnvError(f"{tasks[0]}={tasks[1]} adds up to {total_tasks} tasks but "
                           f"{world_var}={world_size}", hint=_COPIED_HINT)
    _check_below("SLURM_PROCID", rank, world_var, world_size, _COPIED_HINT)
    _check_below("SLURM_NODEID", node_rank, num_nodes_var, num_nodes, _COPIED_HINT)
    local_world_size = per_node[node_rank]
    _check_below("SLURM_LOCALID", local_rank, f"the task count of node {node_rank} in {tasks[0]}",
                 local_world_size, _COPIED_HINT)
    node_name = _lookup(environ, s["node_name"])
    if node_name is not None and node_name[1] != hosts[node_rank]:
        raise DistEnvError(f"{node_name[0]}={node_name[1]} but node {node_rank} (SLURM_NODEID) of "
                           f"{nodelist[0]} is {hosts[node_rank]}", hint=_COPIED_HINT)
    gtids = _lookup(environ, s["gtids"])
    if gtids is not None:
        _check_gtids(gtids, rank, local_world_size)
    return _Ranks(rank, local_rank, world_size, local_world_size, node_rank, num_nodes)


def _check_gtids(gtids: tuple[str, str], rank: int, local_world_size: int) -> None:
    name, value = gtids
    parts = value.split(",")
    if len(parts) != local_world_size or str(rank) not in parts:
        raise DistEnvError(f"{name}={value} (the ranks on this node) does not hold SLURM_PROCID={rank} "
                           f"among {local_world_size} tasks", hint=_COPIED_HINT)


@functools.lru_cache(maxsize=64)
def _layout(nodelist: tuple[str, str],
            tasks: tuple[str, str]) -> tuple[tuple[str, ...], tuple[int, ...], int]:
    """Hosts, tasks per node and their sum, computed once per distinct (variable, value) pair."""
    try:
        hosts = expand_cached(nodelist[1])
    except HostlistError as exc:
        raise DistEnvError(f"{nodelist[0]}: {exc.message}", hint=_COPIED_HINT) from None
    if not hosts:
        raise DistEnvError(f"{nodelist[0]} is empty", hint=_SRUN_HINT)
    per_node = _parse_tasks_per_node(tasks[1], tasks[0])
    return hosts, per_node, sum(per_node)


def parse_tasks_per_node(text: str, variable: str = "SLURM_TASKS_PER_NODE") -> list[int]:
    """Expand Slurm's tasks-per-node notation: ``2(x2)`` -> [2, 2]; ``3,2(x3),1`` -> [3, 2, 2, 2, 1]."""
    return list(_parse_tasks_per_node(text, variable))


@functools.lru_cache(maxsize=64)
def _parse_tasks_per_node(text: str, variable: str) -> tuple[int, ...]:
    hint = f"{variable} looks like '2(x3),1' (count(xrepeat)); {_COPIED_HINT}"
    out: list[int] = []
    for item in text.strip().split(","):
        match = _TPN_RE.match(item.strip())
        if match is None:
            raise DistEnvError(f"{variable}={text!r}: {item!r} is not N or N(xK)", hint=hint)
        count, repeat = int(match.group(1)), int(match.group(2) or 1)
        if count < 1 or repeat < 1:
            raise DistEnvError(f"{variable}={text!r}: {item!r} has a zero count", hint=hint)
        if len(out) + repeat > MAX_HOSTS:
            raise DistEnvError(f"{variable}={text!r} lists more than 1,000,000 nodes", hint=hint)
        out.extend([count] * repeat)
    return tuple(out)


def _master(environ: Mapping[str, str], port_range: tuple[int, int]) -> tuple[str, int]:
    addr_var = _lookup(environ, MASTER_VARS["addr"])
    port_var = _lookup(environ, MASTER_VARS["port"])
    hint = "export MASTER_ADDR and MASTER_PORT, or run inside a Slurm step so orch can compute them"
    if addr_var is not None and addr_var[1].strip():
        addr = addr_var[1].strip()
    else:
        nodelist = _lookup(environ, SLURM_VARS["nodelist"])
        if nodelist is None:
            raise DistEnvError("MASTER_ADDR is not set and there is no Slurm node list to take it from",
                               hint=hint)
        try:
            hosts = expand_cached(nodelist[1])
        except HostlistError as exc:
            raise DistEnvError(f"{nodelist[0]}: {exc.message}", hint=_COPIED_HINT) from None
        if not hosts:
            raise DistEnvError(f"{nodelist[0]} is empty", hint=hint)
        addr = hosts[0]
    if port_var is not None and port_var[1].strip():
        port = _parse_int(*port_var, hint="MASTER_PORT must be a TCP port number (1-65535)")
        if not 1 <= port <= 65535:
            raise DistEnvError(f"MASTER_PORT={port} is not a TCP port (1-65535)",
                               hint="unset it to let orch choose, or pick one in 1024-65535")
        return addr, port
    if _lookup(environ, SLURM_VARS["job_id"]) is None:
        raise DistEnvError("MASTER_PORT is not set and there is no SLURM_JOB_ID to derive it from", hint=hint)
    return addr, job_master_port(environ, port_range)


def job_master_port(environ: Mapping[str, str], port_range: tuple[int, int] = DEFAULT_PORT_RANGE) -> int:
    """This Slurm job's port: ``master_port(SLURM_JOB_ID, SLURM_RESTART_COUNT, port_range)``.

    Works in the batch script too (that is where orch's script computes and exports it).
    SLURM_RESTART_COUNT is unset on a job's first run, which counts as 0.
    """
    job = _need(environ, SLURM_VARS["job_id"],
                "this runs inside a Slurm job (the batch script or an srun step); local runs pick a free port")
    return master_port(job[1], restart_count(environ), port_range)


def script_run_id(environ: Mapping[str, str], fallback: str) -> str:
    """TORCHELASTIC_RUN_ID: the Slurm job (``123`` or array element ``123_4``), else ``fallback``."""
    array = environ.get("SLURM_ARRAY_JOB_ID")
    if array and environ.get("SLURM_ARRAY_TASK_ID"):
        return f"{array}_{environ['SLURM_ARRAY_TASK_ID']}"
    found = _lookup(environ, SLURM_VARS["job_id"])
    return found[1] if found else fallback


ATTEMPT_VAR = "ORCH_ATTEMPT"  # the attempt inside the allocation (0 first), set by the batch script and orch run


def restart_count(environ: Mapping[str, str], fallback: int = 0) -> int:
    """How often the job was started again: SLURM_RESTART_COUNT inside Slurm (requeues), else ``fallback``,
    plus ORCH_ATTEMPT (restarts inside the allocation). The one reading of those variables:
    the master port, the outcome records, the start-up clock, TORCHELASTIC_RESTART_COUNT."""
    found = _lookup(environ, SLURM_VARS["restart_count"])
    base = fallback if found is None or not found[1].strip() else _parse_int(*found, hint=_COPIED_HINT)
    attempt = environ.get(ATTEMPT_VAR, "").strip()
    return base + (_parse_int(ATTEMPT_VAR, attempt, hint=_COPIED_HINT) if attempt else 0)
