"""The environments orch gives tasks, the other way round from :func:`orchestrator.env.distenv.derive`:

* :func:`simulate_slurm_task_envs`: the variables Slurm gives each srun task of an allocation (the dry
  run derives every rank from them, with the same ``derive`` the tasks use);
* :func:`script_env`: exactly the variables torchrun gives a worker, for a script run by orch
  (``--script``), and the names orch's launcher owns (``--env`` may not set them).

Pure: the launcher exports the result.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from orchestrator.env.distenv import SLURM_VARS
from orchestrator.env.hostlist import compress
from orchestrator.errors import ConfigError

if TYPE_CHECKING:
    from orchestrator.env.distenv import DistEnv


def simulate_slurm_task_envs(hosts: Sequence[str], tasks_per_node: int, job_id: str, gpus_per_node: int,
                             master_addr: str, master_port: int) -> Iterator[dict[str, str]]:
    """The environment Slurm 22.05 gives each task of ``srun`` in an allocation made with
    ``sbatch --nodes=len(hosts) --ntasks-per-node=T --gpus-per-node=G`` (block distribution),
    plus the MASTER_ADDR/MASTER_PORT orch's batch script exports. Yields one dict per rank, in
    rank order; ``derive()`` of each gives back that rank. Used by the dry run.
    """
    if not hosts:
        raise ConfigError("cannot simulate an allocation without hosts", hint="give at least one node")
    if tasks_per_node < 1 or gpus_per_node < 0:
        raise ConfigError(f"tasks_per_node={tasks_per_node}, gpus_per_node={gpus_per_node}: need "
                          "at least one task per node and no negative GPU count",
                          hint="use --gpus N with N >= 1 for one task per GPU")
    n = len(hosts)
    nodelist = compress(hosts)
    layout = f"{tasks_per_node}(x{n})" if n > 1 else str(tasks_per_node)
    ntasks = str(n * tasks_per_node)
    job = {
        "SLURM_JOB_ID": str(job_id), "SLURM_JOBID": str(job_id),
        "SLURM_JOB_NODELIST": nodelist, "SLURM_NODELIST": nodelist,
        "SLURM_JOB_NUM_NODES": str(n), "SLURM_NNODES": str(n),
        "SLURM_NTASKS": ntasks, "SLURM_NPROCS": ntasks,
        "SLURM_NTASKS_PER_NODE": str(tasks_per_node), "SLURM_TASKS_PER_NODE": layout,
        "SLURM_STEP_ID": "0", "SLURM_STEPID": "0",
        "SLURM_STEP_NODELIST": nodelist, "SLURM_STEP_NUM_NODES": str(n),
        "SLURM_STEP_NUM_TASKS": ntasks, "SLURM_STEP_TASKS_PER_NODE": layout,
        "MASTER_ADDR": master_addr, "MASTER_PORT": str(master_port),
    }
    if gpus_per_node:
        gpus = ",".join(str(g) for g in range(gpus_per_node))
        job.update({
            "CUDA_VISIBLE_DEVICES": gpus, "GPU_DEVICE_ORDINAL": gpus, "ROCR_VISIBLE_DEVICES": gpus,
            "SLURM_STEP_GPUS": gpus, "SLURM_JOB_GPUS": gpus,
            "SLURM_GPUS_ON_NODE": str(gpus_per_node), "SLURM_GPUS_PER_NODE": str(gpus_per_node),
        })
    for node_rank, host in enumerate(hosts):
        first = node_rank * tasks_per_node
        node = {**job, "SLURM_NODEID": str(node_rank), "SLURMD_NODENAME": host,
                "SLURM_GTIDS": ",".join(str(r) for r in range(first, first + tasks_per_node))}
        for local_rank in range(tasks_per_node):
            yield {**node, "SLURM_PROCID": str(first + local_rank), "SLURM_LOCALID": str(local_rank)}


# --- scripts: exactly the variables torchrun gives a worker ----------------------------------------
# torch/distributed/elastic/agent/server/local_elastic_agent.py (torch 2.x) sets these for every
# worker; a script run by orch sees the same names (values from derive(); one role, "default").
# Under torchrun TORCHELASTIC_USE_AGENT_STORE is True (its agent hosts the store). orch has no agent:
# on one machine (MASTER_ADDR loopback) it is True and rank 0's task hosts the store itself, listening on
# loopback only, before the script runs (torch's own store would listen on every interface); across
# nodes it is False and rank 0 hosts the store of init_process_group("env://"), as without torchrun.
SCRIPT_ROLE_NAME = "default"
SCRIPT_DEFAULTS: dict[str, str] = {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}  # torchrun's, unless set
ORCH_ONLY_VARS = ("NODE_RANK",)  # orch's launcher sets it for its own jobs; torchrun does not
# torchrun gives each worker its own error file; orch: logs/rank<R>.error.json (records/jobdirs.py)
ERROR_FILE_VAR = "TORCHELASTIC_ERROR_FILE"
# Names a user may not set with --env: the launcher derives them per task.
LAUNCHER_OWNED_VARS = frozenset({
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "NODE_RANK",
    "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
    "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE", "CUDA_VISIBLE_DEVICES",
    "ORCH_JOB_DIR", "ORCH_PREEMPT_SIGNAL", "ORCH_ATTEMPT", "ORCH_RUN_ID", ERROR_FILE_VAR,
})
# Tracker ids (orch.spec.tracking): ORCH_RUN_ID for every task; the trackers' own variables only for
# the trackers a script opted into (--track / cluster.yaml tracking), so its wandb.init() / mlflow.start_run()
# continue the job folder's one run after a requeue or restart.
RUN_ID_VAR = "ORCH_RUN_ID"


def tracking_env(run_id: str, group: str | None, tracking: Sequence[str],
                 mlflow_run_id: str | None = None) -> dict[str, str]:
    """The tracker variables of a script's task (pure)."""
    out = {RUN_ID_VAR: run_id}
    if "wandb" in tracking:
        out.update({"WANDB_RUN_ID": run_id, "WANDB_RESUME": "allow"})
        if group:
            out["WANDB_RUN_GROUP"] = group
    if "mlflow" in tracking and mlflow_run_id:
        out["MLFLOW_RUN_ID"] = mlflow_run_id
    return out


def script_env(env: DistEnv, *, restart_count: int, max_restarts: int, run_id: str, cpus_per_task: int,
               environ: Mapping[str, str]) -> dict[str, str]:
    """torchrun's worker variables for this task (pure). ``environ`` is only read for the two that
    torchrun leaves alone when set: OMP_NUM_THREADS (else the task's CPUs; torchrun uses 1) and
    TORCH_NCCL_ASYNC_ERROR_HANDLING (else 1)."""
    out = {
        "RANK": str(env.rank), "LOCAL_RANK": str(env.local_rank),
        "WORLD_SIZE": str(env.world_size), "LOCAL_WORLD_SIZE": str(env.local_world_size),
        "GROUP_RANK": str(env.node_rank), "GROUP_WORLD_SIZE": str(env.num_nodes),
        "ROLE_RANK": str(env.rank), "ROLE_WORLD_SIZE": str(env.world_size), "ROLE_NAME": SCRIPT_ROLE_NAME,
        "MASTER_ADDR": env.master_addr, "MASTER_PORT": str(env.master_port),
        "TORCHELASTIC_RESTART_COUNT": str(restart_count), "TORCHELASTIC_MAX_RESTARTS": str(max_restarts),
        "TORCHELASTIC_RUN_ID": run_id, "TORCHELASTIC_USE_AGENT_STORE": str(is_loopback(env.master_addr)),
        "OMP_NUM_THREADS": environ.get("OMP_NUM_THREADS") or str(max(1, cpus_per_task)),
    }
    for name, default in SCRIPT_DEFAULTS.items():
        out[name] = environ.get(name) or default
    return out


# --- a rank with no GPU: what `accelerate launch --cpu` sets (accelerate 1.x, utils/launch.py,
# prepare_simple_launcher_cmd_env). Accelerate's state and HF TrainingArguments read ACCELERATE_USE_CPU:
# with it, a rank that sees WORLD_SIZE > 1 joins the world over gloo (MULTI_CPU); without it, a rank with no
# GPU trains alone (DistributedType.NO, world size 1) even under torchrun. KMP_*: Intel OpenMP's thread
# placement, which accelerate sets along. A value the user set (--env, the shell) wins.
CPU_RANK_VARS: dict[str, str] = {
    "ACCELERATE_USE_CPU": "True",
    "KMP_AFFINITY": "granularity=fine,compact,1,0",
    "KMP_BLOCKTIME": "1",
}


def cpu_rank_env(has_gpu: bool, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of a script rank: :data:`CPU_RANK_VARS` when it has no GPU, unless ``environ``
    already sets them (pure)."""
    if has_gpu:
        return {}
    return {name: environ.get(name) or default for name, default in CPU_RANK_VARS.items()}


LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback(addr: str) -> bool:
    """Whether MASTER_ADDR is this machine's loopback (every rank on one node) (pure)."""
    text = addr.strip().strip("[]")
    if text.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


# --- the other launch styles (orchestrator.spec.launch) --------------------------------------------
# per-node: the task is the node's launcher, as a user's `python train.py -nr N` on each node was: it gets
# where to meet and how many ranks there are, not a rank of its own (its processes take theirs).
PER_NODE_DROPPED = ("RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK",
                    "ROLE_WORLD_SIZE", "ROLE_NAME", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE",
                    ERROR_FILE_VAR)  # one error file would be every spawned process's


def per_node_env(env: DistEnv, procs_per_node: int) -> dict[str, str]:
    """The variables of a per-node task (one task per node; ``env`` is the task's, rank = node) (pure)."""
    return {"MASTER_ADDR": env.master_addr, "MASTER_PORT": str(env.master_port), "NODE_RANK": str(env.node_rank),
            "NNODES": str(env.num_nodes), "NPROC_PER_NODE": str(procs_per_node),
            "WORLD_SIZE": str(env.num_nodes * procs_per_node)}


def slurm_style_env(env: DistEnv) -> dict[str, str]:
    """Slurm's task variables as the rank's own step gives them (pure): a script that reads SLURM_PROCID,
    SLURM_NTASKS... sees this rank's place in this job's one step, not the allocation's figures (the
    job-level SLURM_NTASKS/SLURM_NNODES of an allocation with spare nodes, the batch step's values), and
    ``orch run`` gives a local run the same names. Every name of distenv's table for each field."""
    values = {"rank": env.rank, "local_rank": env.local_rank, "node_rank": env.node_rank,
              "world_size": env.world_size, "num_nodes": env.num_nodes}
    return {name: str(value) for field, value in values.items() for name in SLURM_VARS[field]}


def _no_change(env: DistEnv, procs: int) -> tuple[tuple[str, ...], dict[str, str]]:
    return (), {}


# style -> (the torchrun variables it drops, the ones it sets) for a task of that style; orch's launcher
# applies it after torchrun's (local-rank-arg's difference is an argument: task/scriptrun.py)
STYLE_VARIABLES: dict[str, Callable[[DistEnv, int], tuple[tuple[str, ...], dict[str, str]]]] = {
    "env": _no_change,
    "local-rank-arg": _no_change,
    "per-node": lambda env, procs: (PER_NODE_DROPPED, per_node_env(env, procs)),
    "slurm": lambda env, procs: ((), slurm_style_env(env)),
}
