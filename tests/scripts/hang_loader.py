"""Rank 1's data loader blocks in time.sleep at step 20 while rank 0 waits in backward (DDP's all-reduce);
rank 1 prints ``rank 1 hung at <time.time()>`` when it blocks."""

import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)


def load_batch(i):
    if rank == 1 and i == 20:
        print(f"rank 1 hung at {time.time():.3f}", flush=True)
        time.sleep(10**6)
    return torch.randn(8, 4)


for i in range(50):
    loss = model(load_batch(i)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
dist.destroy_process_group()
