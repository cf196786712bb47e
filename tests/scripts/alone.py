"""A script whose ranks each train alone: every rank calls ``init_process_group`` with a hard-coded
``tcp://127.0.0.1:<port>`` (a port of its own), ``world_size=1``, ``rank=0``, so it never joins the
rendezvous its launcher set up; each rank is rank 0 of a world of 1 and trains an independent copy."""

import socket

import torch
import torch.distributed as dist


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", world_size=1, rank=0)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
dist.destroy_process_group()
