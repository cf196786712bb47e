"""Rank 1 spins in an endless Python loop at step 5 while rank 0 waits in the next all_reduce; rank 1 prints
``rank 1 hung at <time.time()>`` when it starts spinning."""

import time

import torch
import torch.distributed as dist


def spin():
    count = 0
    while True:
        count += 1


dist.init_process_group("gloo")
rank = dist.get_rank()
value = torch.ones(4)
for i in range(20):
    if rank == 1 and i == 5:
        print(f"rank 1 hung at {time.time():.3f}", flush=True)
        spin()
    dist.all_reduce(value)
dist.destroy_process_group()
