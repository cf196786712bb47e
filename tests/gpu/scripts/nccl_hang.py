"""A hang for NCCL's flight recorder (tests/gpu/test_gpu_flightrec.py): every rank all-reduces once per step on
its GPU; at step 5 rank 1 sleeps in ``load_batch`` instead, so the others wait in all_reduce (collective 6) until
``--collective-timeout`` ends it. ``.item()`` makes each step wait for its all-reduce on the GPU."""

import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
rank = dist.get_rank()
device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if torch.cuda.is_available() else "cpu"


def load_batch(step):
    if rank == 1 and step == 5:
        print(f"rank 1 hung at {time.time():.3f}", flush=True)
        time.sleep(10**6)
    return torch.ones(64, 64, device=device)


for step in range(10):
    batch = load_batch(step)
    dist.all_reduce(batch)
    batch.sum().item()
dist.destroy_process_group()
