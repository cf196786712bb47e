"""Rendezvous on one machine: the store listens on loopback only.

``init_process_group(init_method="tcp://127.0.0.1:PORT")`` makes rank 0's TCPStore listen on every
interface, and the store has no authentication: anyone on the network could join or poison the
rendezvous of an ``orch run`` (or of a single-node Slurm job, whose MASTER_ADDR is loopback too).
When MASTER_ADDR is a loopback address, rank 0 binds the listening socket to that address itself
and hands it to the store (``master_listen_fd``); the other ranks connect as before.

A user's script calls ``init_process_group("gloo")`` (env://) itself, and torch's store would listen on
every interface whatever MASTER_ADDR says (torch 2.14: ``*:PORT`` in ``ss -ltnp``). On one machine
the script's rank 0 task therefore hosts the store before the script runs (:func:`host_script_store`),
and every rank sees ``TORCHELASTIC_USE_AGENT_STORE=True`` (as under torchrun, whose agent hosts it):
torch's env:// and tcp:// rendezvous at MASTER_ADDR:MASTER_PORT are then clients of that store. A
script that builds its own ``TCPStore(is_master=True)`` on another port is its own business.
"""

from __future__ import annotations

import datetime
import socket

from torch.distributed import TCPStore  # type: ignore[attr-defined]  # (not re-exported in the stubs)

from orchestrator.env.taskenv import LOOPBACK_NAMES, is_loopback

__all__ = ["LOOPBACK_NAMES", "host_script_store", "is_loopback", "loopback_store"]



def loopback_store(addr: str, port: int, *, rank: int, world_size: int,
                   timeout: datetime.timedelta) -> TCPStore:
    """The job's TCPStore, listening on ``addr`` (a loopback address) only. Raises OSError when
    rank 0 cannot bind (the port is taken), like init_process_group would."""
    host = addr.strip().strip("[]")
    if host.lower() in LOOPBACK_NAMES:
        host = "127.0.0.1"
    if rank != 0:
        return TCPStore(host, port, world_size, False, timeout=timeout)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(max(128, world_size))
    except OSError:
        sock.close()
        raise
    return TCPStore(host, port, world_size, True, timeout=timeout, master_listen_fd=sock.detach(),
                         wait_for_workers=False)


_HOSTED: list[TCPStore] = []  # kept alive for the life of the task


def host_script_store(addr: str, port: int, *, world_size: int, timeout: datetime.timedelta) -> None:
    """Rank 0 of a script on one machine: host the job's store on loopback for the script's rendezvous
    (``port`` 0: a free port; :func:`hosted` names the newest)."""
    _HOSTED.append(loopback_store(addr, port, rank=0, world_size=world_size, timeout=timeout))


def hosted() -> TCPStore | None:
    """The store this task hosted last (the agents of a script's warm restarts talk through the first)."""
    return _HOSTED[-1] if _HOSTED else None
