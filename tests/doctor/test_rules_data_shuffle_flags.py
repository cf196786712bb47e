"""DDP004 on a sampler a helper of the file builds (``def make_sampler(ds, shuffle): return DistributedSampler(ds,
shuffle=shuffle)``): it shuffles when a caller passes ``shuffle`` as True, by keyword, by position or through a name
it sets to True (``if is_train: shuffle = True``); a caller that only ever passes False stays quiet. Quiet too where
something else calls set_epoch: a LightningModule's method that a ``*_dataloader`` hook calls (Lightning's loops set
the epoch), a project class the file makes that calls ``set_epoch`` itself (an iteration-based batch sampler)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file, check_source

_SCRIPT = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def make_sampler(dataset, shuffle, distributed):
    if distributed:
        return DistributedSampler(dataset, shuffle=shuffle)
    return None


def make_loader(dataset, is_train):
    if is_train:
        shuffle = {train}
    else:
        shuffle = False
    return DataLoader(dataset, sampler=make_sampler(dataset, shuffle, True), batch_size=4)


def main(dataset):
    dist.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
    for epoch in range(3):
        for x in make_loader(dataset, True):
            model(x).sum().backward()
"""


def ddp004(train: str) -> list[int]:
    return [f.line for f in check_source(_SCRIPT.format(train=train), "t.py") if f.code == "DDP004"]


def test_a_name_the_caller_sets_to_true_passed_by_position_shuffles() -> None:
    assert ddp004("True") == [10]


def test_a_caller_that_passes_only_false_is_quiet() -> None:
    assert ddp004("False") == []


_LIGHTNING = """
import lightning as L
from torch.utils.data import DataLoader, DistributedSampler


class Model(L.LightningModule):
    def _loader(self, dataset, is_train):
        return DataLoader(dataset, sampler=DistributedSampler(dataset, shuffle=is_train), batch_size=4)

    def {hook}(self):
        return self._loader(self.dataset, True)


L.Trainer(strategy="ddp").fit(Model())
"""


def test_a_sampler_a_lightning_dataloader_hook_builds_through_a_method_is_quiet() -> None:
    source = _LIGHTNING.format(hook="train_dataloader")
    assert "DDP004" not in [f.code for f in check_source(source, "t.py")]


def test_the_same_method_called_by_no_hook_is_reported() -> None:
    source = _LIGHTNING.format(hook="make_loader")
    assert "DDP004" in [f.code for f in check_source(source, "t.py")]


_SAMPLERS = """\
class EpochBatches:
    def __init__(self, batches, epochs):
        self.batches, self.epochs = batches, epochs

    def __iter__(self):
        for epoch in range(self.epochs):
            {set_epoch}
            yield from self.batches
"""

_TRAIN = """\
import torch
import torch.distributed as dist
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler
from samplers import EpochBatches

dist.init_process_group("nccl")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
dataset = list(range(8))
batches = EpochBatches(BatchSampler(DistributedSampler(dataset, shuffle=True), 2, False), 3)
for x in DataLoader(dataset, batch_sampler=batches):
    model(x).sum().backward()
"""


@pytest.mark.parametrize(("set_epoch", "reported"), [
    ("self.batches.sampler.set_epoch(epoch)", False), ("pass", True)])
def test_a_project_class_that_calls_set_epoch_stands_in_for_it(tmp_path: Path, set_epoch: str,
                                                               reported: bool) -> None:
    (tmp_path / "samplers.py").write_text(_SAMPLERS.format(set_epoch=set_epoch), encoding="utf-8")
    (tmp_path / "train.py").write_text(_TRAIN, encoding="utf-8")
    assert ("DDP004" in [f.code for f in check_file(tmp_path / "train.py")]) is reported


_SPREAD = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def main(dataset):
    dist.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
    sampler_args = {args}
    loader = DataLoader(dataset, sampler=DistributedSampler(dataset, **sampler_args), batch_size=4)
    for epoch in range(3):
        for x in loader:
            model(x).sum().backward()
"""


@pytest.mark.parametrize(("args", "found"), [
    ('{"shuffle": False, "drop_last": False}', []),  # GLaMM's three training samplers
    ("dict(shuffle=False)", []),
    ('{"shuffle": True}', [11]),
    ('{"drop_last": True}', [11]),  # shuffle left to its default
])
def test_a_shuffle_given_through_a_spread_dict_is_read(args: str, found: list[int]) -> None:
    source = _SPREAD.format(args=args)
    assert [f.line for f in check_source(source, "t.py") if f.code == "DDP004"] == found
