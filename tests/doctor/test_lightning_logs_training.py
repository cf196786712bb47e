"""DDP013 for a LightningModule's training summary: a loss or accuracy logged on epoch level by a training hook
(``training_step`` with ``on_epoch=True``, ``on_train_epoch_end``) with no ``sync_dist=True`` is rank 0's mean over
its own batches, written as the epoch's (tests/doctor/real/JUDGING.md's metric policy). A step's value (the
training_step's default), a synced log, and a value that is not a loss or an accuracy (the learning rate) are not."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source
from orchestrator.doctor.confidence import LIGHTNING_LOG, TRAINING_SUMMARY

_MODULE = """
import torch
import lightning.pytorch as pl


class Model(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        loss = self.layer(batch).sum()
        {step_log}
        return loss

    def on_train_epoch_end(self):
        {epoch_log}


trainer = pl.Trainer(devices=8, num_nodes=2, strategy="ddp")
"""


def _ddp013(step_log: str = "pass", epoch_log: str = "pass") -> list[tuple[int, frozenset[str]]]:
    source = _MODULE.format(step_log=step_log, epoch_log=epoch_log)
    return [(f.line, f.marks) for f in check_source(source, "t.py") if f.code == "DDP013"]


@pytest.mark.parametrize(("log", "reported"), [
    ('self.log("train_loss", loss, on_epoch=True)', True),
    ('self.log("train_loss", loss, on_step=False, on_epoch=True, sync_dist=False)', True),
    ('self.log_dict({"train_acc": loss}, on_epoch=True)', True),
    ('self.log("train_loss", loss)', False),  # on_epoch is off in training_step: a step's value, progress
    ('self.log("train_loss", loss, on_epoch=True, sync_dist=True)', False),
    ('self.log("lr", self.lr, on_epoch=True)', False),  # not a loss or an accuracy (and an attribute)
    ('self.log("lr", loss * 0, on_epoch=True)', False),
])
def test_a_training_step_log(log: str, reported: bool) -> None:
    assert _ddp013(step_log=log) == ([(9, frozenset({TRAINING_SUMMARY, LIGHTNING_LOG}))] if reported else [])


@pytest.mark.parametrize(("log", "reported"), [
    ('self.log("train_epoch_loss", torch.stack(self.losses).mean())', True),  # on epoch level by default there
    ('self.log("train_epoch_loss", torch.stack(self.losses).mean(), on_epoch=False)', False),
    ('self.log("train_epoch_loss", torch.stack(self.losses).mean(), sync_dist=True)', False),
])
def test_an_epoch_end_log(log: str, reported: bool) -> None:
    assert _ddp013(epoch_log=log) == ([(13, frozenset({TRAINING_SUMMARY, LIGHTNING_LOG}))] if reported else [])


def test_a_shared_steps_training_side_is_a_training_summary() -> None:
    """auto_avsr-like ``_step(batch, batch_idx, "train")``: the training hook's side logs on epoch level unsynced."""
    source = """
import lightning.pytorch as pl


class Model(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        return self._step(batch, "train")

    def _step(self, batch, step_type):
        loss = self.layer(batch).sum()
        if step_type == "train":
            self.log("loss", loss, on_step=True, on_epoch=True)
        return loss
"""
    assert [(f.line, f.marks) for f in check_source(source, "t.py") if f.code == "DDP013"] == [
        (12, frozenset({TRAINING_SUMMARY, LIGHTNING_LOG}))]
