"""What each rank of a local run starts with: a free port for its rendezvous and its environment.

Each process gets the torchrun-style variables (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
NODE_RANK=0, MASTER_ADDR=127.0.0.1, MASTER_PORT=a free port) and derives its DistEnv with the same
``distenv.derive`` as a Slurm task. Variables that would tell it it is some other launcher's task are dropped.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping

from orchestrator.task import reaper

LOCAL_ADDR = "127.0.0.1"
# Inherited variables that would tell a child it is some other launcher's task: dropped.
STRIP_VARS = frozenset({"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK",
                        "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
                        reaper.TOKEN_VAR})
STRIP_PREFIXES = ("SLURM_",)


def free_port(host: str = LOCAL_ADDR) -> int:
    """A TCP port that is free right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def child_env(base: Mapping[str, str], *, rank: int, nproc: int, port: int,
              extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of local rank ``rank``: torchrun-style variables, no inherited Slurm ones."""
    env = {k: v for k, v in base.items() if k not in STRIP_VARS and not k.startswith(STRIP_PREFIXES)}
    env.update(extra or {})
    env.update({
        "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(nproc),
        "LOCAL_WORLD_SIZE": str(nproc), "NODE_RANK": "0",
        "MASTER_ADDR": LOCAL_ADDR, "MASTER_PORT": str(port),
    })
    return env
