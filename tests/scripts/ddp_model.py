"""The sibling module ddp_train.py imports (proves the script's folder is first on sys.path)."""

import torch


def make_model(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
