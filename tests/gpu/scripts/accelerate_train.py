"""A Hugging Face Accelerate script (no orch import): ``Accelerator()`` must take orch's ranks from the
environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT), as under ``accelerate launch`` or torchrun.

A linear model learns a fixed teacher for ``--steps`` steps, bf16 mixed precision on GPUs that have it.
``<out>/rank<R>.json``: Accelerate's process index and count, its distributed type, the device, the losses and
a SHA-256 of the final parameters (float32 bytes).

    python accelerate_train.py --out DIR [--steps N]
"""

import argparse
import hashlib
import json
import os
from pathlib import Path

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    precision = "bf16" if cuda and torch.cuda.is_bf16_supported() else "no"
    accelerator = Accelerator(mixed_precision=precision, cpu=not cuda)  # on CPU ranks: cpu=True, else 1 process
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4096, 16, generator=gen)
    y = x @ (torch.randn(16, 4, generator=gen) / 4)
    torch.manual_seed(0)
    model = nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    losses: list[float] = []
    for step, (xb, yb) in enumerate(loader):
        if step == args.steps:
            break
        loss = F.mse_loss(model(xb).float(), yb)
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        losses.append(float(loss.detach()))
    flat = torch.cat([p.detach().float().flatten().cpu() for p in accelerator.unwrap_model(model).parameters()])
    record = {
        "process_index": accelerator.process_index, "num_processes": accelerator.num_processes,
        "distributed_type": str(accelerator.distributed_type), "device": str(accelerator.device),
        "precision": precision, "losses": losses,
        "param_sha256": hashlib.sha256(flat.numpy().tobytes()).hexdigest(),
    }
    (Path(args.out) / f"rank{os.environ['RANK']}.json").write_text(json.dumps(record), encoding="utf-8")
    accelerator.end_training()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
