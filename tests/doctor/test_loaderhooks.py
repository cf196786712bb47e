"""A shuffling DistributedSampler whose epoch a framework's loop sets is no DDP004: one made in a LightningModule's
``*_dataloader`` hook, or returned by a transformers ``Trainer`` subclass's ``_get_train_sampler`` (INSTRUCTOR's
trainer; the Trainer calls ``set_epoch`` on its training sampler every epoch). The same sampler in a class no framework
drives keeps the finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

TRAINER = """\
import torch.distributed as dist
from torch.utils.data import DistributedSampler
from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments


class TaskTrainer({base}):
    def _get_train_sampler(self):
        return DistributedSampler(self.train_dataset, num_replicas=dist.get_world_size(), rank=dist.get_rank())


def main(model, data):
    dist.init_process_group("nccl")
    trainer = TaskTrainer(model=model, args=Seq2SeqTrainingArguments("out"), train_dataset=data)
    trainer.train()
"""

LIGHTNING = """\
import lightning as L
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


class Data({base}):
    def train_dataloader(self):
        return DataLoader(self.data, sampler=DistributedSampler(self.data))


def main(model):
    dist.init_process_group("nccl")
    L.Trainer(devices=-1, num_nodes=2).fit(model, datamodule=Data())
"""


@pytest.mark.parametrize(("source", "framework"), [(TRAINER, "Seq2SeqTrainer"), (LIGHTNING, "L.LightningDataModule")])
def test_a_sampler_made_in_a_frameworks_hook_has_its_epoch_set(tmp_path: Path, source: str, framework: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(source.format(base=framework), encoding="utf-8")
    assert [f.line for f in check_file(script) if f.code == "DDP004"] == []
    script.write_text(source.format(base="object"), encoding="utf-8")  # no framework drives the class
    assert [f.code for f in check_file(script) if f.code == "DDP004"] == ["DDP004"]
