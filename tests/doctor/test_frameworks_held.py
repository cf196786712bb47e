"""The framework named where the Trainer class is picked into a variable first (``trainer_cls = GCTrainer if
args.grad_cache else Trainer``, then ``trainer_cls(...)``), where transformers' Trainer is imported from its own
module (``transformers.trainer``), and not ``accelerate`` for the Trainer's own Accelerator that a subclass's method
uses (``self.accelerator.prepare(loader)`` in ``get_train_dataloader``)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.doctor.frameworks import read_frameworks


def _names(tmp_path: Path, text: str) -> list[str]:
    script = tmp_path / "train.py"
    script.write_text(text, encoding="utf-8")
    return [framework.name for framework in read_frameworks(script)]


def test_a_trainer_class_held_in_a_variable_shows_the_trainer(tmp_path: Path) -> None:
    assert _names(tmp_path, """\
from transformers.trainer import Trainer


class CacheTrainer(Trainer):
    pass


def main(args, model):
    trainer_cls = CacheTrainer if args.cache else Trainer
    trainer = trainer_cls(model=model, args=args)
    trainer.train()
""") == ["hf-trainer"]


def test_a_variable_holding_another_class_shows_no_framework(tmp_path: Path) -> None:
    assert _names(tmp_path, """\
from mylib import FastLoop, SlowLoop


def main(args, model):
    loop_cls = FastLoop if args.fast else SlowLoop
    loop_cls(model).run()
""") == []


_SUBCLASS = """\
from accelerate import Accelerator
from torch.utils.data import DataLoader
from transformers import Trainer


class MyTrainer(Trainer):
    def get_train_dataloader(self):
        return self.accelerator.prepare(DataLoader(self.train_dataset, batch_size=8))


def main(model, data, args):
    accelerator = Accelerator()
    print(accelerator.num_processes)
    MyTrainer(model=model, args=args, train_dataset=data).train()
"""


def test_the_trainers_own_accelerator_in_a_subclass_is_not_accelerate(tmp_path: Path) -> None:
    assert _names(tmp_path, _SUBCLASS) == ["hf-trainer"]


def test_an_accelerator_the_script_prepares_with_beside_a_trainer_stays_named(tmp_path: Path) -> None:
    driven = _SUBCLASS + """\
    model, loader = accelerator.prepare(model, DataLoader(data))
"""
    assert sorted(_names(tmp_path, driven)) == ["accelerate", "hf-trainer"]
