"""DDP005 and a value a function of the file returns after reducing it: SFA3D's ``val_loss = validate(...)``, whose
batches go through the project's ``reduce_tensor`` (an ``all_reduce``) under ``if configs.distributed:``, printed in
the epoch loop: the world's value, the same on every rank. A function that reduces nothing still leaves its result
a rank's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

_UTILS = """
import torch.distributed as dist


def reduce_tensor(tensor, world_size):
    rt = tensor.clone()
    dist.all_reduce(rt)
    return rt / world_size
"""

_SCRIPT = """
import torch
import torch.distributed as dist
from utils import reduce_tensor


def validate(loader, model, configs):
    total = 0.0
    for x in loader:
        loss = model(x).sum()
        if configs.distributed:
            loss = {reduce}
        total += loss.item()
    return total / len(loader)


def main(configs, model, opt, loader):
    dist.init_process_group("nccl")
    for epoch in range(3):
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        val_loss = validate(loader, model, configs)
        print("val_loss: {{:.4e}}".format(val_loss))
"""


@pytest.mark.parametrize(("reduce", "found"), [
    ("reduce_tensor(loss.data, configs.world_size)", []),
    ("loss.detach()", [25]),  # nothing reduced: each rank prints its own shard's loss
])
def test_a_value_a_function_returns_after_reducing_it_is_no_rank_s_own(tmp_path: Path, reduce: str,
                                                                        found: list[int]) -> None:
    (tmp_path / "utils.py").write_text(_UTILS)
    (tmp_path / "train.py").write_text(_SCRIPT.format(reduce=reduce))
    assert [f.line for f in check_file(tmp_path / "train.py") if f.code == "DDP005"] == found
