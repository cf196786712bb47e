"""A script whose rank 1 stops before a collective: it prints when (``rank 1 stuck at <time.time()>``) and sleeps
(``--sleep`` seconds, default a day) while rank 0 waits in an ``all_reduce``; rank 0's wait ends only when the
process group's timeout runs out. It passes no ``timeout=`` to ``init_process_group`` unless ``--timeout S``.

    python stuck_rank.py [--sleep S] [--timeout S]
"""

import argparse
import datetime
import time

import torch
import torch.distributed as dist


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sleep", type=float, default=86400.0)
    parser.add_argument("--timeout", type=float, default=None)
    args = parser.parse_args()
    extra = {} if args.timeout is None else {"timeout": datetime.timedelta(seconds=args.timeout)}
    dist.init_process_group("gloo", **extra)
    rank = dist.get_rank()
    print(f"rank {rank} joined", flush=True)
    if rank == 1:
        print(f"rank 1 stuck at {time.time():.3f}", flush=True)
        time.sleep(args.sleep)  # the stuck rank
    total = torch.ones(1)
    dist.all_reduce(total)
    print(f"rank {rank} all_reduce {total.item()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
