"""A name imported in several branches, one per task (``if task == "superglue": from tasks.superglue.get_trainer
import get_trainer`` / ``elif task == "glue": from tasks.glue.get_trainer import ...``), in a repository that ships
only some of those modules (P-tuning v2 ships ``tasks/superglue`` alone): the script's call is followed into the
module that is there, not lost on the last import's missing one. Where the last import's module is there, it stays
the one followed, as before."""

from __future__ import annotations

import ast
from pathlib import Path

from orchestrator.doctor.frameworks import read_frameworks
from orchestrator.source.names import Module
from orchestrator.source.project import Project

ENTRY = '''import sys

task = sys.argv[1]
if task == "superglue":
    from tasks.superglue.get_trainer import get_trainer
elif task == "glue":
    from tasks.glue.get_trainer import get_trainer
elif task == "qa":
    from tasks.qa.get_trainer import get_trainer
else:
    raise NotImplementedError(task)

trainer = get_trainer(sys.argv[2:])
trainer.train()
'''
GET_TRAINER = '''from training.trainer_base import BaseTrainer


def get_trainer(args):
    return BaseTrainer(model=None, args=args)
'''
TRAINER_BASE = '''from transformers import Trainer


class BaseTrainer(Trainer):
    def log_best_metrics(self):
        self.log_metrics("best", {})
'''


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root / "run.py"


def _project(script: Path) -> Project:
    tree = ast.parse(script.read_text())
    return Project(script, Module(tree), tree)


def test_the_branch_whose_module_the_repository_ships_is_followed(tmp_path: Path) -> None:
    script = _write(tmp_path, {"run.py": ENTRY, "tasks/superglue/get_trainer.py": GET_TRAINER,
                               "training/trainer_base.py": TRAINER_BASE})
    project = _project(script)
    assert project.module.aliases["get_trainer"] == "tasks.superglue.get_trainer.get_trainer"
    frameworks = read_frameworks(script)
    assert [f.name for f in frameworks] == ["hf-trainer"]
    assert frameworks[0].why.startswith("tasks/superglue/get_trainer.py:5: ")


def test_the_last_import_stays_when_its_module_is_there(tmp_path: Path) -> None:
    script = _write(tmp_path, {"run.py": ENTRY, "tasks/superglue/get_trainer.py": GET_TRAINER,
                               "tasks/qa/get_trainer.py": GET_TRAINER, "training/trainer_base.py": TRAINER_BASE})
    assert _project(script).module.aliases["get_trainer"] == "tasks.qa.get_trainer.get_trainer"
    assert read_frameworks(script)[0].why.startswith("tasks/qa/get_trainer.py:5: ")


def test_no_branch_shipped_leaves_the_last_import(tmp_path: Path) -> None:
    script = _write(tmp_path, {"run.py": ENTRY})
    assert _project(script).module.aliases["get_trainer"] == "tasks.qa.get_trainer.get_trainer"
    assert read_frameworks(script) == []
