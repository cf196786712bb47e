"""A script written for ``python -m torch.distributed.launch`` before ``--use-env``: the local rank comes
only from the ``--local_rank`` argument the old launcher passed (never from LOCAL_RANK), and picks the
device on GPUs; the rest from ``env://``. It trains a small DDP model on rank-dependent data and writes
``<out>/rank<R>.json`` with the local rank it was given and the parameters.

    python local_rank_arg.py --local_rank N --out DIR [--steps N]
"""

import argparse
import json
import os

import torch
import torch.distributed as dist
from ddp_model import make_model
from torch.nn.parallel import DistributedDataParallel


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", "--local-rank", type=int, default=0)  # torch 2 passes --local-rank
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", default=3, type=int)
    args = parser.parse_args()
    if torch.cuda.is_available():
        torch.cuda.set_device(args.local_rank)
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo", init_method="env://")
    rank = dist.get_rank()
    model = make_model(seed=1 + rank)
    ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(100 + rank)
    for _ in range(args.steps):
        loss = ddp(torch.randn(4, 8, generator=gen)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"rank{rank}.json"), "w", encoding="utf-8") as fh:
        json.dump({"rank": rank, "local_rank_arg": args.local_rank, "world": dist.get_world_size(),
                   "params": [float(v) for v in flat.tolist()]}, fh)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
