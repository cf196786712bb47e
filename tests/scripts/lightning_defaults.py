"""A Lightning script as its docs write it (no orch import): ``Trainer`` with its defaults for where things go.

Lightning writes its logs and checkpoints under the working directory: ``lightning_logs/version_N/``
(the CSV logger when TensorBoard is not installed, ``checkpoints/*.ckpt`` beside it). Under a launcher
(orch's ranks look like torchrun's) it takes the world it is given: ``devices`` is the ranks per node,
``num_nodes`` the nodes.

    python lightning_defaults.py [--steps N]
"""

import argparse
import os

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
        self.net = nn.Linear(8, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=gen)
    data = DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=8)
    nodes = int(os.environ.get("GROUP_WORLD_SIZE", "1"))
    per_node = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    trainer = pl.Trainer(accelerator="cpu", devices=per_node, num_nodes=nodes,
                         strategy="ddp" if nodes * per_node > 1 else "auto", max_steps=args.steps,
                         log_every_n_steps=1, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Regressor(), data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
