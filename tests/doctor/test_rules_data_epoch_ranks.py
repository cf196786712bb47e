"""DDP004 for a ``set_epoch`` that only some ranks call (under ``if rank == 0:``): the ranks that skip it keep the first
epoch's order, so from the second epoch on the ranks' shards overlap and miss samples. A call on every rank, on both
sides of the rank test, or for a sampler that does not shuffle is no finding."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

_SCRIPT = """
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    sampler = DistributedSampler(range(100){shuffle})
    loader = DataLoader(range(100), sampler=sampler)
    for epoch in range(3):
{epoch}
        for batch in loader:
            pass


main()
"""

_GUARDED = "        if rank == 0:\n            sampler.set_epoch(epoch)\n            print(epoch)"


def ddp004(epoch: str, shuffle: str = "") -> list[str]:
    found = check_source("import os\n" + _SCRIPT.format(epoch=epoch, shuffle=shuffle), "t.py")
    return [f.message for f in found if f.code == "DDP004"]


@pytest.mark.parametrize("epoch", [
    _GUARDED,
    "        if local_rank == 0:\n            sampler.set_epoch(epoch)",
    "        if dist.get_rank() == 0:\n            sampler.set_epoch(epoch)\n        else:\n            print(epoch)",
])
def test_set_epoch_on_rank_zero_alone_is_reported(epoch: str) -> None:
    [message] = ddp004(epoch)
    assert "some ranks only" in message


@pytest.mark.parametrize("epoch", [
    "        sampler.set_epoch(epoch)\n        if rank == 0:\n            print(epoch)",
    "        if rank == 0:\n            sampler.set_epoch(epoch)\n        else:\n            sampler.set_epoch(epoch)",
])
def test_set_epoch_on_every_rank_is_no_finding(epoch: str) -> None:
    assert ddp004(epoch) == []


def test_a_sampler_that_does_not_shuffle_needs_no_set_epoch_anywhere() -> None:
    assert ddp004(_GUARDED, shuffle=", shuffle=False") == []


def test_without_any_set_epoch_the_usual_finding_stays() -> None:
    [message] = ddp004("        print(epoch)")
    assert "never called" in message
