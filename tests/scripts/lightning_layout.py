"""A Lightning script with a literal layout, as its docs write it (no orch import): 2 CPU processes on one node.

Each rank writes the checksum of its final parameters to ``OUT/rank<R>.txt``: under ``orch run --nproc 2``
and under ``torchrun --nproc-per-node 2`` both ranks end with the same one (one world, one model).

    python lightning_layout.py --out DIR [--steps N]
"""

import argparse
import os
from pathlib import Path

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(8, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    L.seed_everything(0, verbose=False)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(96, 8, generator=gen)
    data = DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=8)
    model = Regressor()
    trainer = L.Trainer(accelerator="cpu", devices=2, num_nodes=1, strategy="ddp", max_steps=args.steps,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(model, data)
    checksum = sum(float(p.detach().double().sum()) for p in model.parameters())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"rank{trainer.global_rank}.txt").write_text(f"{trainer.world_size} {checksum!r}\n")
    print(f"rank {os.environ.get('RANK')} world {trainer.world_size} checksum {checksum!r}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
