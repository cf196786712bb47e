"""A torchrun-style script (no orch import) that holds its GPU until released: the CUDA-context check.

Every rank reads torchrun's variables, notes which device was current when the script began (orch binds
cuda:LOCAL_RANK before a script runs), sets its device as torchrun scripts do, joins the process group
(NCCL on GPUs, gloo on CPU), all-reduces ``rank + 1``, writes ``<out>/rank<R>.json`` (its pid, its GPU's
uuid, the sum) and then waits for ``<out>/release`` (the test reads nvidia-smi meanwhile), at most ``--hold``
seconds; exit 3 when never released.

    python hold_gpu.py --out DIR [--hold SECONDS]
"""

import argparse
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--hold", type=float, default=150.0)
    args = parser.parse_args()
    out = Path(args.out)
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    cuda = torch.cuda.is_available()
    bound = torch.cuda.current_device() if cuda else None
    if cuda:
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    try:
        tensor = torch.full((1 << 20,), float(rank + 1), device=device)
        dist.all_reduce(tensor)
        if cuda:
            torch.cuda.synchronize(device)
        record = {
            "rank": rank, "local_rank": local_rank, "world": dist.get_world_size(), "pid": os.getpid(),
            "backend": dist.get_backend(), "bound": bound, "device": str(device),
            "uuid": str(torch.cuda.get_device_properties(device).uuid) if cuda else None,
            "sum": float(tensor[0].item()), "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
        }
        partial = out / f".rank{rank}.json"
        partial.write_text(json.dumps(record), encoding="utf-8")
        partial.replace(out / f"rank{rank}.json")
        deadline = time.monotonic() + args.hold
        while not (out / "release").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        released = (out / "release").exists()
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return 0 if released else 3


if __name__ == "__main__":
    raise SystemExit(main())
