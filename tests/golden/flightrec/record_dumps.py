"""Records the flight recorder dumps in this folder from real runs: torch's own writer, gloo ranks on CPU.

Run: ``.venv/bin/python tests/golden/flightrec/record_dumps.py`` (torch 2.14.1 recorded the files here). Each
rank calls ``torch._C._distributed_c10d._dump_fr_trace`` (the pickle torch's FlightRecorder ``dump()`` writes,
``torch/csrc/distributed/c10d/FlightRecorderDetail.hpp``; the same bytes NCCL's watchdog writes to
``TORCH_FR_DUMP_TEMP_FILE<rank>`` on a timeout, format version "2.10") into ``<case>/nccl_trace_rank_<R>``:

- ``behind``: 4 ranks all-reduce once per step; at step 3 rank 1 sleeps in ``load_batch`` instead, the others
  wait in all_reduce (collective 4) until their 3 s timeout;
- ``mismatch``: 2 ranks; at step 2 rank 0 calls all_reduce and rank 1 broadcast (collective 3 on both).
"""

from __future__ import annotations

import datetime
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

HERE = Path(__file__).resolve().parent


def load_batch(rank: int, step: int, case: str) -> torch.Tensor:
    if case == "behind" and rank == 1 and step == 3:
        time.sleep(5)  # the hang: the others time out meanwhile
        raise TimeoutError("rank 1's data loader gave up")
    return torch.ones(8, 4)


def train(rank: int, world: int, case: str) -> None:
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(29611 + len(case))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=3))
    try:
        for step in range(5):
            batch = load_batch(rank, step, case)
            if case == "mismatch" and step == 2 and rank == 1:
                dist.broadcast(batch, src=0)
            else:
                dist.all_reduce(batch)
    except Exception as exc:  # the timeout (or the loader giving up): dump as the watchdog would
        print(f"rank {rank}: {type(exc).__name__}", file=sys.stderr)
    out = HERE / case / f"nccl_trace_rank_{rank}"
    out.write_bytes(torch._C._distributed_c10d._dump_fr_trace(True, True, False))


def main() -> None:
    os.environ["TORCH_FR_BUFFER_SIZE"] = "2000"
    for case, world in (("behind", 4), ("mismatch", 2)):
        (HERE / case).mkdir(exist_ok=True)
        mp.spawn(train, args=(world, case), nprocs=world)


if __name__ == "__main__":
    main()
