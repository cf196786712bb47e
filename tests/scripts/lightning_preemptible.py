"""A Lightning script with orch's preemption callback: tiny regression, synthetic data, 2 epochs of 8 steps per rank.

``--wait-at K`` (first run only): at optimizer step K every rank writes ``<out>/ready<rank>`` and waits (at most
120 s) for the preemption signal, so the test signals inside the first epoch. Every rank writes its final
parameters to ``<out>/params<rank>.json`` (exact floats) and the step it resumed at.
"""

import argparse
import json
import os
import time
from pathlib import Path

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from orchestrator.runtime.integrations.lightning import OrchPreemption
from orchestrator.runtime.integrations.preempt import preempt_flag, resuming

parser = argparse.ArgumentParser()
parser.add_argument("--out", type=Path, required=True)
parser.add_argument("--wait-at", type=int, default=0)
args = parser.parse_args()
args.out.mkdir(parents=True, exist_ok=True)
rank = int(os.environ.get("RANK", "0"))


class Regression(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)


class WaitForSignal(pl.Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if args.wait_at and not resuming() and trainer.global_step == args.wait_at:
            (args.out / f"ready{rank}").touch()
            deadline = time.monotonic() + 120
            while not preempt_flag().requested and time.monotonic() < deadline:
                time.sleep(0.05)


pl.seed_everything(0)
data = torch.Generator().manual_seed(0)
x = torch.randn(64, 4, generator=data)
loader = DataLoader(TensorDataset(x, x.sum(1, keepdim=True).sin()), batch_size=4, shuffle=True)
model = Regression()
local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
trainer = pl.Trainer(accelerator="cpu", devices=local, num_nodes=int(os.environ.get("WORLD_SIZE", "1")) // local,
                     strategy="ddp", max_epochs=2, logger=False, default_root_dir=args.out / "pl",
                     enable_progress_bar=False, enable_model_summary=False,
                     callbacks=[WaitForSignal(), OrchPreemption()])
resumed_at = [-1]


class Seen(pl.Callback):
    def on_train_start(self, trainer, pl_module):
        resumed_at[0] = trainer.global_step


trainer.callbacks.append(Seen())
trainer.fit(model, loader, ckpt_path="last")
params = {k: v.flatten().tolist() for k, v in model.state_dict().items()}
(args.out / f"params{rank}.json").write_text(json.dumps({"params": params, "resumed_at": resumed_at[0]}))
