"""A per-node script (the seed wiki's form: ``-n`` nodes, ``-g`` processes, ``-nr`` this node) that starts its own
ranks with ``mp.spawn`` and holds their GPUs until released: the CUDA-context check of the per-node style.

Each spawned process takes rank ``nr * g + index``, notes the device current when it began, binds
``cuda:index``, joins the process group (NCCL on GPUs, gloo on CPU) through ``env://`` (MASTER_ADDR/PORT from
whoever started it per node), all-reduces ``rank + 1``, writes ``<out>/rank<R>.json`` (its pid, its GPU's uuid,
the sum, the parent's pid) and waits for ``<out>/release``, at most ``--hold`` seconds. The parent (the task
orch starts per node) never touches CUDA.

    python spawn_hold_gpu.py -n NODES -g PROCS -nr NODE --out DIR [--hold SECONDS]
"""

import argparse
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(index, args):
    rank = args.nr * args.gpus + index
    cuda = torch.cuda.is_available()
    bound = torch.cuda.current_device() if cuda else None
    if cuda:
        torch.cuda.set_device(index)
        device = torch.device("cuda", index)
        dist.init_process_group("nccl", init_method="env://", world_size=args.world_size, rank=rank, device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", init_method="env://", world_size=args.world_size, rank=rank)
    out = Path(args.out)
    try:
        tensor = torch.full((1 << 20,), float(rank + 1), device=device)
        dist.all_reduce(tensor)
        if cuda:
            torch.cuda.synchronize(device)
        record = {"rank": rank, "world": dist.get_world_size(), "pid": os.getpid(), "parent": os.getppid(),
                  "backend": dist.get_backend(), "bound": bound, "device": str(device),
                  "uuid": str(torch.cuda.get_device_properties(device).uuid) if cuda else None,
                  "sum": float(tensor[0].item()), "visible": os.environ.get("CUDA_VISIBLE_DEVICES")}
        partial = out / f".rank{rank}.json"
        partial.write_text(json.dumps(record), encoding="utf-8")
        partial.replace(out / f"rank{rank}.json")
        deadline = time.monotonic() + args.hold
        while not (out / "release").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", "--nodes", default=1, type=int)
    parser.add_argument("-g", "--gpus", default=1, type=int)
    parser.add_argument("-nr", "--nr", default=0, type=int)
    parser.add_argument("--out", required=True)
    parser.add_argument("--hold", type=float, default=150.0)
    args = parser.parse_args()
    args.world_size = args.gpus * args.nodes
    mp.spawn(worker, nprocs=args.gpus, args=(args,))


if __name__ == "__main__":
    main()
