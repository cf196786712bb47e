"""``python -m orchestrator.runtime.forkserver FD --job-dir DIR``: the server the ranks of ``orch run`` are forked
from (:mod:`orchestrator.task.forkserver`, the protocol and its loop). It imports what every rank of orch's
entrypoint imports first (torch, and ``torch._dynamo`` unless ``ORCH_PREFETCH_DYNAMO=0``), once; each rank it
forks then runs :mod:`orchestrator.runtime.launch` with its own arguments, as a started one would.

A forked rank begins as a fresh interpreter would in what it does not share: Python's and numpy's random
generators are seeded anew (a fork copies them), and its start-up record counts its imports from the fork
(the torch it did not import itself is not counted as its ``import_torch``).
"""

from __future__ import annotations

import os
import random
import sys


def preload() -> None:
    """What every rank of orch's entrypoint imports before it trains: here, once for all of them. CUDA must not be
    initialized by it (a forked child cannot use a parent's CUDA): if it was, the server leaves before it is ready,
    and orch run starts each rank on its own."""
    import torch

    if os.environ.get("ORCH_PREFETCH_DYNAMO") != "0":
        import torch._dynamo
    if torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        print("orch: the fork server's imports initialized CUDA: the ranks start on their own", file=sys.stderr)
        sys.exit(3)


def as_fresh() -> None:
    """In a forked rank: the generators a fresh interpreter seeds from the system, seeded so."""
    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


def main() -> None:
    from orchestrator.runtime.launch import run_task  # orch's task modules too, once
    from orchestrator.task import forkserver

    preload()
    argv = forkserver.serve(int(sys.argv[1]))
    if argv is None:  # the client is done: no rank is left to fork (and torch's teardown is not needed)
        os._exit(0)
    as_fresh()
    sys.argv = [sys.argv[0], *argv]
    run_task()


if __name__ == "__main__":
    main()
