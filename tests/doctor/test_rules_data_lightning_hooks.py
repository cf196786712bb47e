"""DDP004 is silent on a shuffling DistributedSampler built in a ``*_dataloader`` hook of a LightningModule or a
LightningDataModule (Lightning's loops call ``set_epoch`` on every loader's sampler), and still reports one built in
a plain class's method or a hook of a class that only shares the name; a sampler kept by ``setup`` in
``self.X`` counts when a ``*_dataloader`` hook reads it."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

_SCRIPT = """
import torch
{imports}
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Data({base}):
    def {method}(self):
        ds = TensorDataset(torch.ones(8, 2))
        return DataLoader(ds, batch_size=2, sampler=DistributedSampler(ds, shuffle=True))


trainer = Trainer(devices=8, num_nodes=2, strategy="ddp", use_distributed_sampler=False)
trainer.fit(Model(), datamodule=Data())
"""


def ddp004(imports: str, base: str, method: str = "train_dataloader") -> list[int]:
    """The lines of DDP004's findings, as offsets from the sampler's line (0: the sampler is reported)."""
    source = _SCRIPT.format(imports=imports, base=base, method=method)
    sampler = next(n for n, text in enumerate(source.splitlines(), 1) if "DistributedSampler(ds" in text)
    return [f.line - sampler for f in check_source(source, "t.py") if f.code == "DDP004"]


@pytest.mark.parametrize(("imports", "base"), [
    ("import lightning as L\nfrom lightning import Trainer\nfrom m import Model", "L.LightningDataModule"),
    ("import pytorch_lightning as pl\nfrom pytorch_lightning import Trainer\nfrom m import Model",
     "pl.LightningModule"),
    ("from lightning.pytorch import LightningDataModule, Trainer\nfrom m import Model", "LightningDataModule")])
def test_a_sampler_in_a_lightning_dataloader_hook_is_not_reported(imports: str, base: str) -> None:
    assert ddp004(imports, base) == []


@pytest.mark.parametrize(("imports", "base", "method"), [
    ("import lightning as L\nfrom lightning import Trainer\nfrom m import Model", "object", "train_dataloader"),
    ("from mylib import LightningDataModule, Trainer, Model", "LightningDataModule", "train_dataloader"),
    ("import lightning as L\nfrom lightning import Trainer\nfrom m import Model", "L.LightningDataModule", "build")])
def test_a_sampler_lightning_does_not_run_is_still_reported(imports: str, base: str, method: str) -> None:
    assert ddp004(imports, base, method) == [0]


_KEPT = """
import torch
import lightning as L
from lightning import Trainer
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Data(L.LightningDataModule):
    def setup(self, stage=None):
        self.ds = TensorDataset(torch.ones(8, 2))
        self.sampler = DistributedSampler(self.ds, shuffle=True)

    def {hook}(self):
        return DataLoader(self.ds, batch_size=2, sampler=self.sampler)


Trainer(devices=8, num_nodes=2, strategy="ddp", use_distributed_sampler=False).fit(model, datamodule=Data())
"""


@pytest.mark.parametrize(("hook", "reported"), [("train_dataloader", False), ("make_loader", True)])
def test_a_sampler_kept_by_setup_for_a_dataloader_hook(hook: str, reported: bool) -> None:
    found = [f.line for f in check_source(_KEPT.format(hook=hook), "t.py") if f.code == "DDP004"]
    assert found == ([11] if reported else [])
