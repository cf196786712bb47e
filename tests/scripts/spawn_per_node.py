"""A script that starts its own ranks on each node, as the seed wiki's ``mnist-distributed.py`` does
(``../shared/seeds/002_*``): ``-n`` nodes, ``-g`` processes per node, ``-nr`` this node's index,
``mp.spawn`` inside, rank = nr * g + index, ``init_process_group(init_method="env://")`` with the world
size and rank it computed. Unlike the wiki it sets no MASTER_ADDR/MASTER_PORT (the two lines the wiki
hard-codes): whoever starts it per node exports them. It trains a small model with DDP on rank-dependent
data (gloo on CPU) and writes ``<out>/rank<R>.json`` with the parameters.

    python spawn_per_node.py -n NODES -g PROCS -nr NODE --out DIR [--steps N]
"""

import argparse
import json
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from ddp_model import make_model
from torch.nn.parallel import DistributedDataParallel


def train(index, args):
    rank = args.nr * args.gpus + index
    dist.init_process_group(backend="gloo", init_method="env://", world_size=args.world_size, rank=rank)
    model = make_model(seed=1 + rank)
    ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(100 + rank)
    for _ in range(args.steps):
        x = torch.randn(4, 8, generator=gen)
        loss = ddp(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    record = {"rank": rank, "world": dist.get_world_size(), "params": [float(v) for v in flat.tolist()],
              "env": {k: os.environ.get(k) for k in ("MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "NNODES",
                                                     "NPROC_PER_NODE", "WORLD_SIZE", "RANK", "LOCAL_RANK")}}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"rank{rank}.json"), "w", encoding="utf-8") as fh:
        json.dump(record, fh)
    dist.barrier()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", "--nodes", default=1, type=int)
    parser.add_argument("-g", "--gpus", default=1, type=int, help="processes per node")
    parser.add_argument("-nr", "--nr", default=0, type=int, help="this node's index")
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", default=3, type=int)
    args = parser.parse_args()
    args.world_size = args.gpus * args.nodes
    mp.spawn(train, nprocs=args.gpus, args=(args,))


if __name__ == "__main__":
    main()
