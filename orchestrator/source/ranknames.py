"""The names that say "rank": the environment variables a launcher sets (global and node-local rank, node count, world
size), the names and attributes that hold a rank when nothing else says, the flags and helpers of the main process,
and the calls that return a rank. Tables only; ``source/ranks.py`` reads code with them."""

from __future__ import annotations

import re
from typing import Literal

RankKind = Literal["global", "local", "rankish"]

# Environment variables that hold the global / the node-local rank.
GLOBAL_ENV = frozenset({"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
LOCAL_ENV = frozenset({"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"})
# Environment variables that hold the number of nodes / of processes in the world.
NODES_ENV = frozenset({"SLURM_NNODES", "SLURM_JOB_NUM_NODES", "NNODES", "GROUP_WORLD_SIZE", "NUM_NODES"})
WORLD_ENV = frozenset({"WORLD_SIZE", "SLURM_NTASKS", "SLURM_NPROCS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
# Names that hold a rank when nothing else says what they hold (parameters, attributes).
RANK_NAMES = frozenset({"rank", "global_rank", "world_rank", "grank", "proc_rank", "process_index"})
LOCAL_NAMES = frozenset({"local_rank", "gpu", "gpu_id", "local_gpu", "device_id", "lrank", "local_process_index"})
# Accelerate's and the HF Trainer's process_index is the global rank by their API (local_process_index the local one)
BY_NAME: dict[str, RankKind] = {**dict.fromkeys(RANK_NAMES, "rankish"), **dict.fromkeys(LOCAL_NAMES, "local"),
                                 "process_index": "global"}


def by_name(name: str) -> RankKind | None:
    """The rank a name says it holds (``local_rank``; a private attribute's too: ``cfg.environment._local_rank``; a
    config's capitalised rank too: ``cfg.ddp.LOCAL_RANK``, not ``cfg.GPU``, a device list as often as an index)."""
    bare = name.lstrip("_")
    return BY_NAME.get(bare.lower() if bare.isupper() and "RANK" in bare else bare)


# Flags and helpers that mean "this is the main process".
MAIN_FLAGS = frozenset({
    "is_main", "is_master", "master_process", "is_main_process", "main_process", "is_rank_zero", "is_rank0",
    "rank0", "rank_zero", "is_chief", "is_leader", "is_root", "is_local_main_process", "is_master_process",
    "is_global_zero", "is_local_master", "is_primary", "is_main_rank", "is_master_rank", "is_rank_0",
    "is_world_process_zero", "is_local_process_zero",
})

# The frameworks' own rank attributes (Accelerate's, Lightning's, Fabric's, the HF Trainer's): an API, not a guess.
FRAMEWORK_FLAGS = frozenset({"is_main_process", "is_local_main_process", "process_index", "local_process_index",
                              "is_global_zero", "is_world_process_zero", "is_local_process_zero", "global_rank"})


def is_main_flag(name: str | None) -> bool:
    """``is_master``, a getter of it (lingua's ``get_is_master()``), a worker's (DALL-E's ``is_root_worker()``)."""
    if name is None:
        return False
    bare = name.removeprefix("get_")
    return bare in MAIN_FLAGS or bare.removesuffix("_worker") in MAIN_FLAGS


RANK_CALLS: dict[str, RankKind] = {
    "torch.distributed.get_rank": "global",
    "torch.distributed.get_global_rank": "global",
    "torch.distributed.get_node_local_rank": "local",
    "get_rank": "rankish",
    "get_local_rank": "local",
    "Get_rank": "global",  # mpi4py: MPI.COMM_WORLD.Get_rank()
}

RANK_GETTER = re.compile(r"get_\w*rank")  # a rank's getter: get_data_parallel_rank(), get_global_rank()

# calls whose result carries their arguments (a path, a string, a number): a rank in, a rank out
TRANSPARENT = frozenset({"int", "str", "join", "format", "Path", "joinpath", "with_name", "with_suffix", "abspath",
                          "expanduser", "normpath", "replace", "min", "max", "tensor"})
