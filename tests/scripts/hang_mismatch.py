"""Mismatched collectives at step 10: rank 0 calls all_reduce, rank 1 calls broadcast. Each rank prints
``rank R hung at <time.time()>`` before its collective."""

import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
value = torch.ones(4)
for i in range(20):
    if i == 10:
        print(f"rank {rank} hung at {time.time():.3f}", flush=True)
    if i == 10 and rank == 1:
        dist.broadcast(value, src=0)
    else:
        dist.all_reduce(value)
dist.destroy_process_group()
