"""What an absolute ``from module import ...`` binds: each name's meaning, and a training framework's classes for
``import *`` (an installed package is never read, so only the table's names; another package's star binds none)."""

from __future__ import annotations

import ast

import pytest

from orchestrator.source.importednames import imported_from


def _bound(source: str) -> list[tuple[str, str]]:
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.ImportFrom)
    return imported_from(node)


def test_each_name_and_alias_means_the_module_s_member() -> None:
    assert _bound("from torch.nn.parallel import DistributedDataParallel as DDP, scatter") == [
        ("DDP", "torch.nn.parallel.DistributedDataParallel"), ("scatter", "torch.nn.parallel.scatter")]


@pytest.mark.parametrize(("source", "expected"), [
    ("from transformers.trainer import *",
     [("*", "transformers.trainer.*"), ("Trainer", "transformers.trainer.Trainer")]),
    ("from accelerate import *", [("*", "accelerate.*"), ("Accelerator", "accelerate.Accelerator")]),
    ("from numpy import *", [("*", "numpy.*")]),
])
def test_a_star_import_binds_a_frameworks_classes_only(source: str, expected: list[tuple[str, str]]) -> None:
    assert _bound(source) == expected


def test_lightnings_star_import_binds_its_trainer_and_module() -> None:
    bound = dict(_bound("from pytorch_lightning import *"))
    assert bound["Trainer"] == "pytorch_lightning.Trainer"
    assert bound["LightningModule"] == "pytorch_lightning.LightningModule"
