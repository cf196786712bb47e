"""A script that never calls ``init_process_group``: under several ranks each trains an independent copy
(what a framework that decides it is alone looks like from outside)."""

import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
