"""A Lightning script (no orch import) under an external launcher: Lightning must take orch's ranks (its
TorchElasticEnvironment: RANK, LOCAL_RANK, ... and TORCHELASTIC_RUN_ID) instead of starting processes itself.

A linear model learns a fixed teacher for ``--steps`` steps, ``strategy="ddp"``, bf16-mixed on GPUs that have
it. ``<out>/rank<R>.json``: Lightning's global rank and world size, its cluster environment, the device it
trained on, the losses and a SHA-256 of the final parameters (float32 bytes).

    python lightning_train.py --out DIR [--steps N]
"""

import argparse
import hashlib
import json
import os
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl


class Regressor(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(16, 4)
        self.losses: list[float] = []
        self.trained_on = ""  # Lightning moves the module back to the CPU when fit() ends

    def training_step(self, batch, batch_idx):
        self.trained_on = str(self.device)
        x, y = batch
        loss = F.mse_loss(self.net(x).float(), y)
        self.losses.append(float(loss.detach()))
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4096, 16, generator=gen)
    y = x @ (torch.randn(16, 4, generator=gen) / 4)
    torch.manual_seed(0)
    model = Regressor()
    precision = "bf16-mixed" if cuda and torch.cuda.is_bf16_supported() else "32-true"
    trainer = pl.Trainer(accelerator="gpu" if cuda else "cpu", devices=int(os.environ["LOCAL_WORLD_SIZE"]),
                         num_nodes=1, strategy="ddp", max_steps=args.steps, precision=precision, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                         default_root_dir=args.out)
    trainer.fit(model, DataLoader(TensorDataset(x, y), batch_size=32))
    flat = torch.cat([p.detach().float().flatten().cpu() for p in model.parameters()])
    record = {
        "global_rank": trainer.global_rank, "world_size": trainer.world_size, "precision": precision,
        "environment": type(trainer.strategy.cluster_environment).__name__, "device": model.trained_on,
        "losses": model.losses, "param_sha256": hashlib.sha256(flat.numpy().tobytes()).hexdigest(),
    }
    (Path(args.out) / f"rank{os.environ['RANK']}.json").write_text(json.dumps(record), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
