"""Mixed precision in a torchrun-style script (no orch import): ``torch.autocast`` with bf16, or fp16 with
``GradScaler``, under DDP.

An MLP learns a fixed linear teacher, each rank on its own batches (so DDP's gradient all-reduce is what keeps
the replicas equal). ``<out>/rank<R>.json`` holds every step's loss, the dtype autocast gave the forward pass,
the scaler's final scale (fp16), whether every parameter is finite, and a SHA-256 of the final parameters
(float32 bytes). bf16 on a GPU without it: the record says ``skipped`` and why. ``--kill-first-attempt R``: rank R
kills itself (SIGKILL) at step 10 of the first attempt (TORCHELASTIC_RESTART_COUNT 0), for a restart to redo the run.

    python amp_train.py --out DIR [--dtype bf16|fp16] [--steps N] [--kill-first-attempt RANK]
"""

import argparse
import hashlib
import json
import os
import signal
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--kill-first-attempt", type=int, default=None, metavar="RANK")
    args = parser.parse_args()
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    out = Path(args.out) / f"rank{rank}.json"
    try:
        record = {"rank": rank, "world": dist.get_world_size(), "backend": dist.get_backend(), "device": str(device),
                  "dtype": args.dtype, "restart": int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))}
        if args.dtype == "bf16" and cuda and not torch.cuda.is_bf16_supported():
            record["skipped"] = f"{torch.cuda.get_device_name(device)} has no bf16"
            out.write_text(json.dumps(record), encoding="utf-8")
            return 0
        record.update(train(args, device, rank))
        out.write_text(json.dumps(record), encoding="utf-8")
    finally:
        dist.destroy_process_group()
    return 0


def train(args: argparse.Namespace, device: torch.device, rank: int) -> dict:
    dtype = DTYPES[args.dtype]
    torch.manual_seed(0)  # the same start on every rank (DDP broadcasts rank 0's anyway)
    teacher = torch.randn(16, 4, generator=torch.Generator().manual_seed(1)) / 4
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4)).to(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler(device.type, enabled=args.dtype == "fp16")
    gen = torch.Generator().manual_seed(100 + rank)
    losses, out_dtype = [], None
    kill = args.kill_first_attempt == rank and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
    for step in range(args.steps):
        if kill and step == 10:
            os.kill(os.getpid(), signal.SIGKILL)  # kill -9, mid-run: the others wait in their next all-reduce
        x = torch.randn(64, 16, generator=gen)
        x, y = x.to(device), (x @ teacher).to(device)
        with torch.autocast(device_type=device.type, dtype=dtype):
            pred = ddp(x)
        out_dtype = str(pred.dtype)
        loss = F.mse_loss(pred.float(), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(float(loss.detach()))
    flat = torch.cat([p.detach().float().flatten().cpu() for p in model.parameters()])
    return {
        "losses": losses, "out_dtype": out_dtype, "params_finite": bool(torch.isfinite(flat).all()),
        "scale": float(scaler.get_scale()) if scaler.is_enabled() else None,
        "param_sha256": hashlib.sha256(flat.numpy().tobytes()).hexdigest(),
    }


if __name__ == "__main__":
    raise SystemExit(main())
