"""DDP005 and a sum over a list every rank fills alike (NeRF's two fixed test views): the same value on every rank,
nothing to reduce; a list filled from a loader (a rank's own share) or from a rank's indices still is."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

SCRIPT = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
rank = int(os.environ["RANK"])
data = TensorDataset(torch.randn(64, 2))
sampler = DistributedSampler(data)
loader = DataLoader(data, sampler=sampler)
model = DDP(torch.nn.Linear(2, 2))
views = []
{fill}
for epoch in range(3):
    sampler.set_epoch(epoch)
    for (x,) in loader:
        model(x).sum().backward()
    with torch.no_grad():
        test_loss = 0.
        for (view,) in views:
            test_loss += model(view).sum()
        print("test loss", test_loss.item())
"""


@pytest.mark.parametrize(("fill", "found"), [
    ("for i in (1, 4):\n    views.append(data[i])", False),  # the same two views on every rank
    ("views.append(data[0])", False),
    ("for i in range(rank, 64, 8):\n    views.append(data[i])", True),  # each rank its own indices
    ("for batch in loader:\n    views.append(batch)", True),  # the rank's share of a sharded loader
    ("views.append(data[rank])", True),
])
def test_a_sum_over_a_list_every_rank_fills_alike_is_not_reduced_again(fill: str, found: bool) -> None:
    text = SCRIPT.format(fill=fill)
    lines = [f.line for f in check_source(text, "train.py") if f.code == "DDP005"]
    at = text.splitlines().index('        print("test loss", test_loss.item())') + 1
    assert (at in lines) == found, lines
