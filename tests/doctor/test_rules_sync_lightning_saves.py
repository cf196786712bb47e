"""DDP002 on Lightning's ``Trainer.save_checkpoint`` under a rank test: since Lightning 2 it ends in the strategy's
barrier, so rank 0 waits alone (a likely warning: older versions did not wait). Silent when every rank calls it and
for a project's own Trainer class."""

from __future__ import annotations

from orchestrator.doctor import check_source
from orchestrator.doctor.findings import Finding


def ddp002(source: str) -> list[Finding]:
    return [f for f in check_source(source, "t.py") if f.code == "DDP002"]


_HANDLER = """
import signal
import pytorch_lightning as pl
from pytorch_lightning.trainer import Trainer


class Saver(pl.Callback):
    def on_exception(self, trainer: pl.Trainer, pl_module, exception):
        if trainer.global_rank == 0:
            trainer.save_checkpoint("last.ckpt")


def main(model):
    trainer = Trainer(callbacks=[Saver()])

    def on_signal(*args):
        if trainer.global_rank == 0:
            trainer.save_checkpoint("last.ckpt")

    signal.signal(signal.SIGUSR1, on_signal)
    trainer.fit(model)
"""


def test_a_save_checkpoint_only_rank_zero_makes_is_reported_in_a_handler_and_a_hook() -> None:
    found = ddp002(_HANDLER)
    assert sorted(f.line for f in found) == [10, 18]
    assert {(f.severity, f.confidence) for f in found} == {("warning", "likely")}
    assert all("Lightning 2" in f.message for f in found)


def test_a_save_checkpoint_every_rank_makes_is_not_reported() -> None:
    assert ddp002(_HANDLER.replace("        if trainer.global_rank == 0:\n            trainer.save_checkpoint",
                                   "        trainer.save_checkpoint")) == []


def test_a_projects_own_trainer_is_not_lightnings() -> None:
    assert ddp002("""
import torch.distributed as dist


class Trainer:
    def save_checkpoint(self, path):
        pass


trainer = Trainer()
dist.init_process_group("nccl")
if dist.get_rank() == 0:
    trainer.save_checkpoint("last.ckpt")
""") == []
