"""Rendezvous on one machine: the store listens on loopback only.

``init_process_group(init_method="tcp://127.0.0.1:PORT")`` makes rank 0's TCPStore listen on every
interface, and the store has no authentication: anyone on the network could join or poison the
rendezvous of an ``orch run`` (or of a single-node Slurm job, whose MASTER_ADDR is loopback too).
When MASTER_ADDR is a loopback address, rank 0 binds the listening socket to that address itself
and hands it to the store (``master_listen_fd``); the other ranks connect as before.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket

from torch.distributed import TCPStore  # type: ignore[attr-defined]  # (not re-exported in the stubs)

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback(addr: str) -> bool:
    text = addr.strip().strip("[]")
    if text.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


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
