"""A Hugging Face ``Trainer`` script as its docs write it (no ``ddp_timeout``: the default 1800 s) whose rank 1
blocks in ``time.sleep`` in its data set's ``__getitem__`` at its 5th item, while rank 0 goes on to DDP's
all-reduce in ``backward``. Rank 1 prints ``rank 1 hung at <time.time()>`` when it blocks.

    orch run hang_hf_trainer.py --nproc 2 --collective-timeout 5
"""

import os
import tempfile
import time

import torch
from torch import nn
from transformers import Trainer, TrainingArguments


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Linear(8, 1)

    def forward(self, x, y):
        return {"loss": nn.functional.mse_loss(self.net(x), y)}


class Pairs(torch.utils.data.Dataset):
    def __init__(self) -> None:
        self.x = torch.randn(160, 8, generator=torch.Generator().manual_seed(1))
        self.read = 0

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        self.read += 1
        if os.environ.get("RANK") == "1" and self.read == 5 * 8:
            print(f"rank 1 hung at {time.time():.3f}", flush=True)
            time.sleep(10**6)
        return {"x": self.x[i], "y": self.x[i].sum().reshape(1)}


def main() -> int:
    training = TrainingArguments(output_dir=tempfile.mkdtemp(), max_steps=10, per_device_train_batch_size=8,
                                 learning_rate=0.05, report_to=[], save_strategy="no", disable_tqdm=True, seed=0)
    Trainer(model=Tiny(), args=training, train_dataset=Pairs()).train()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
