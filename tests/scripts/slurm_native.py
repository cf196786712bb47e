"""A script written for ``srun``: its place comes from Slurm's task variables (SLURM_PROCID,
SLURM_LOCALID, SLURM_NTASKS, SLURM_NNODES), never from torchrun's RANK/LOCAL_RANK; the rendezvous from
MASTER_ADDR/MASTER_PORT (``env://``). It trains a small DDP model on rank-dependent data and writes
``<out>/rank<R>.json`` with the Slurm values it read and the parameters.

    srun python slurm_native.py --out DIR [--steps N]
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
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", default=3, type=int)
    args = parser.parse_args()
    proc = int(os.environ["SLURM_PROCID"])
    ntasks = int(os.environ["SLURM_NTASKS"])
    local = int(os.environ["SLURM_LOCALID"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local)
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo", init_method="env://",
                            world_size=ntasks, rank=proc)
    model = make_model(seed=1 + proc)
    ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(100 + proc)
    for _ in range(args.steps):
        loss = ddp(torch.randn(4, 8, generator=gen)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    os.makedirs(args.out, exist_ok=True)
    seen = {k: os.environ.get(k) for k in ("SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NNODES",
                                           "SLURM_NODEID")}
    with open(os.path.join(args.out, f"rank{proc}.json"), "w", encoding="utf-8") as fh:
        json.dump({"rank": proc, "slurm": seen, "world": dist.get_world_size(),
                   "params": [float(v) for v in flat.tolist()]}, fh)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
