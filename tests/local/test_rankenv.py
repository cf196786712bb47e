"""What each local rank starts with: torchrun-style variables, none inherited from another launcher."""

from __future__ import annotations

import socket

from orchestrator.local.rankenv import LOCAL_ADDR, child_env, free_port
from orchestrator.task import reaper


def test_a_rank_gets_torchrun_variables_and_no_inherited_launcher_ones() -> None:
    base = {"PATH": "/bin", "SLURM_JOB_ID": "7", "SLURM_PROCID": "3", "RANK": "9", "MASTER_PORT": "1",
            "TORCHELASTIC_RUN_ID": "x", reaper.TOKEN_VAR: "old", "HOME": "/home/u"}
    env = child_env(base, rank=2, nproc=4, port=29555, extra={"ORCH_ATTEMPT": "1"})
    assert env == {"PATH": "/bin", "HOME": "/home/u", "ORCH_ATTEMPT": "1",
                   "RANK": "2", "LOCAL_RANK": "2", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "4", "NODE_RANK": "0",
                   "MASTER_ADDR": LOCAL_ADDR, "MASTER_PORT": "29555"}


def test_extra_variables_never_override_the_ranks_own() -> None:
    env = child_env({}, rank=0, nproc=1, port=1234, extra={"RANK": "5", "MASTER_ADDR": "10.0.0.1"})
    assert (env["RANK"], env["MASTER_ADDR"]) == ("0", LOCAL_ADDR)


def test_a_free_port_can_be_bound() -> None:
    port = free_port()
    assert 0 < port < 65536
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOCAL_ADDR, port))
