"""A Lightning script as its docs write it (DDP on 2 CPU processes, the default timeout) whose rank 1 blocks in
``time.sleep`` inside ``training_step`` at step 5, while rank 0 goes on to DDP's all-reduce in ``backward``.
Rank 1 prints ``rank 1 hung at <time.time()>`` when it blocks. The layout follows the launch (2 processes on one
node under ``orch run --nproc 2``, one on each of 2 nodes under ``orch submit --nodes 2 --gpus 1``).

    orch run hang_lightning.py --nproc 2 --collective-timeout 5
"""

import os
import time

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
        if self.global_rank == 1 and batch_idx == 5:
            print(f"rank 1 hung at {time.time():.3f}", flush=True)
            time.sleep(10**6)
        x, y = batch
        return F.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main() -> int:
    L.seed_everything(0, verbose=False)
    x = torch.randn(160, 8, generator=torch.Generator().manual_seed(0))
    data = DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=8)
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "2"))
    nodes = int(os.environ.get("WORLD_SIZE", "2")) // local
    trainer = L.Trainer(accelerator="cpu", devices=local, num_nodes=nodes, strategy="ddp", max_steps=10, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Regressor(), data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
