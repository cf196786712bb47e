"""A class the script defines and never names never runs: a warning inside it is only possible (``orch doctor --all``),
unless something could still reach it by a name held in a string (a decorator's registry, a config's class path, a
``globals()`` lookup)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.doctor import check_file

_SCRIPT = """
import os
import torch
import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback, ModelCheckpoint

class SaveProjector(Callback):
    def on_train_epoch_end(self, trainer, pl_module):
        torch.save(pl_module.state_dict(), os.path.join("out", "projector.bin"))

{use}
trainer = pl.Trainer(accelerator="gpu", devices="auto", num_nodes=int(os.environ["SLURM_NNODES"]), strategy="ddp",
                     callbacks=[{callbacks}])
trainer.fit(object())
"""


def _saves(tmp_path: Path, name: str, use: str = "", callbacks: str = "ModelCheckpoint()") -> list[str]:
    script = tmp_path / name
    script.write_text(_SCRIPT.format(use=use, callbacks=callbacks))
    return [f.confidence for f in check_file(script) if f.code == "DDP006"]


def test_a_callback_defined_and_never_handed_to_the_trainer_is_only_possible(tmp_path: Path) -> None:
    assert _saves(tmp_path, "never.py") == ["possible"]


def test_a_callback_the_trainer_is_given_keeps_its_confidence(tmp_path: Path) -> None:
    assert _saves(tmp_path, "given.py", callbacks="SaveProjector()") == ["likely"]


def test_a_class_reachable_by_a_string_is_not_judged_unnamed(tmp_path: Path) -> None:
    assert _saves(tmp_path, "registry.py", use='CALLBACKS = {"save": "SaveProjector"}') == ["likely"]
    assert _saves(tmp_path, "lookup.py", use="extra = globals()[os.environ['CB']]()") == ["likely"]
