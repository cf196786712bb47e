"""A Hugging Face ``Trainer`` script as its docs write it (no orch import, no ``use_cpu``): a tiny torch
module whose ``forward`` returns the loss, synthetic data (nothing is downloaded). Each process writes
``<out>/rank<R>.json``: its place in the world the Trainer formed and its final parameters' checksum.

    torchrun --nproc-per-node 2 hf_trainer_train.py --out DIR   (or accelerate launch, or orch run)
"""

import argparse
import json
from pathlib import Path

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
        self.x = torch.randn(96, 8, generator=torch.Generator().manual_seed(1))

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "y": self.x[i].sum().reshape(1)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    training = TrainingArguments(output_dir=str(Path(args.out) / "trainer"), max_steps=args.steps,
                                 per_device_train_batch_size=8, learning_rate=0.05, report_to=[],
                                 save_strategy="no", disable_tqdm=True, logging_steps=1, seed=0)
    model = Tiny()
    Trainer(model=model, args=training, train_dataset=Pairs()).train()
    checksum = sum(float(p.detach().double().sum()) for p in model.parameters())
    record = {"rank": training.process_index, "world_size": training.world_size, "checksum": checksum}
    (Path(args.out) / f"rank{training.process_index}.json").write_text(json.dumps(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
