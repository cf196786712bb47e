"""An Accelerate script as its docs write it (no orch import): ``Accelerator()`` + ``prepare``, a tiny
model and synthetic data (nothing is downloaded). Each process writes ``<out>/rank<R>.json``: its place
in the world Accelerate formed and its final parameters' checksum.

    accelerate launch train.py --out DIR [--steps N]   (or torchrun, or orch run)
"""

import argparse
import json
from pathlib import Path

import torch
from accelerate import Accelerator
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    accelerator = Accelerator()
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(96, 8, generator=torch.Generator().manual_seed(1))
    loader = DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=8, shuffle=True)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, (inputs, targets) in enumerate(loader):
        if step == args.steps:
            break
        loss = nn.functional.mse_loss(model(inputs), targets)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
    checksum = sum(float(p.detach().double().sum()) for p in accelerator.unwrap_model(model).parameters())
    record = {"rank": accelerator.process_index, "world_size": accelerator.num_processes,
              "distributed_type": str(accelerator.distributed_type), "checksum": checksum}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"rank{accelerator.process_index}.json").write_text(json.dumps(record))
    accelerator.wait_for_everyone()
    accelerator.end_training()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
