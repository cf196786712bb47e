"""A script that never calls ``init_process_group``: under several ranks each trains an independent copy
(what a framework that decides it is alone looks like from outside).

    python no_init.py [--sleep SECONDS]   (a pause before training, as a long data preparation)
"""

import argparse
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--sleep", type=float, default=0.0)
time.sleep(parser.parse_args().sleep)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
