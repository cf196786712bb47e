"""A Hugging Face ``Trainer`` script as its docs write it (no orch import): a relative ``output_dir``.

The ``Trainer`` saves its checkpoints to ``<output_dir>/checkpoint-<step>/`` relative to the working
directory. The model is a small torch module whose ``forward`` returns the loss (what ``Trainer`` needs),
so nothing is downloaded.

    python hf_trainer_relative.py [--output-dir out/hf] [--steps N]
"""

import argparse

import torch
from torch import nn
from transformers import Trainer, TrainingArguments


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(8, 1)

    def forward(self, x, y):
        return {"loss": nn.functional.mse_loss(self.net(x), y)}


class Pairs(torch.utils.data.Dataset):
    def __init__(self) -> None:
        gen = torch.Generator().manual_seed(0)
        self.x = torch.randn(64, 8, generator=gen)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "y": self.x[i].sum().reshape(1)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-dir", default="out/hf")
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    training = TrainingArguments(output_dir=args.output_dir, max_steps=args.steps, save_steps=args.steps,
                                 per_device_train_batch_size=8, report_to=[], use_cpu=True,
                                 disable_tqdm=True, logging_steps=1)
    Trainer(model=Tiny(), args=training, train_dataset=Pairs()).train()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
