"""DDP013 for a value assigned (not summed) in an evaluation loop over the rank's shard and shown after it: rank 0
logs its own last batch's figure (``for batch in val_loader: val_loss = model(batch).loss.item()``, then
``wandb.log({"val_loss": val_loss})``); reduced in the loop, or a loop over the whole data set, it is left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

_SCRIPT = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

dist.init_process_group("nccl")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
train = DataLoader(range(10), sampler=DistributedSampler(range(10), shuffle=False))
val = DataLoader(range(10){sampler})
for step, x in enumerate(train):
    model(x).sum().backward()
    if step % 100 == 0:
        for batch in val:
            with torch.no_grad():
                val_loss = model(batch).sum(){reduce}
        if dist.get_rank() == 0:
            print({{"val_loss": val_loss}})
"""


_SHARDED = ", sampler=DistributedSampler(range(10), shuffle=False)"


@pytest.mark.parametrize(("sampler", "reduce", "reported"), [
    (_SHARDED, "", True),
    (_SHARDED, "\n                dist.all_reduce(val_loss)", False),
    ("", "", False),  # every rank evaluates the whole set: not a shard's figure
])
def test_a_value_assigned_in_a_loop_over_the_shard_and_shown_after_it(tmp_path: Path, sampler: str, reduce: str,
                                                                      reported: bool) -> None:
    script = _SCRIPT.format(sampler=sampler, reduce=reduce)
    (tmp_path / "train.py").write_text(script)
    shown = script.splitlines().index('            print({"val_loss": val_loss})') + 1
    assert [f.line for f in check_file(tmp_path / "train.py") if f.code == "DDP013"] == ([shown] if reported else [])
