"""Rank 0 alone calls a barrier inside the training loop (under ``if rank == 0:``); rank 1 goes on to the next
step's gradient all-reduce. Each rank prints ``rank R hung at <time.time()>`` when it enters its last collective."""

import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)

for i in range(50):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    opt.zero_grad()
    if i == 21:
        print(f"rank {rank} hung at {time.time():.3f}", flush=True)
    loss.backward()
    opt.step()
    if rank == 0 and i == 20:
        dist.barrier()
dist.destroy_process_group()
