"""DDP023 for ``Trainer.from_argparse_args(args)`` whose parser a project helper extends (HiVT's ``parser =
HiVT.add_model_specific_args(parser)``): the namespace gets the Trainer's ``gpus`` from the script's own ``--gpus``
flag and no ``num_nodes`` (Lightning's one node), unless the project's modules the script imports add a node count or
Lightning's Trainer flags, when it is a flag's default (orchestrator/doctor/rules_layout.py)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.doctor import check_file
from orchestrator.doctor.feasibility import across_nodes

TRAIN = """\
from argparse import ArgumentParser

import pytorch_lightning as pl

from models.hivt import HiVT

if __name__ == "__main__":
    parser = ArgumentParser()
    parser.add_argument("--gpus", type=int, default=1)
    parser = HiVT.add_model_specific_args(parser)
    args = parser.parse_args()
    trainer = pl.Trainer.from_argparse_args(args)
    trainer.fit(HiVT(**vars(args)))
"""
MODEL = """\
import pytorch_lightning as pl


class HiVT(pl.LightningModule):
    @staticmethod
    def add_model_specific_args(parent_parser):
        parser = parent_parser.add_argument_group("HiVT")
        parser.add_argument("--embed_dim", type=int, default=64)
{more}        return parent_parser

    def num_nodes_of(self, data):
        return data.num_nodes  # a graph's node count: not a Trainer flag
"""


def _layout(folder: Path, more: str = "") -> list:  # type: ignore[type-arg]
    (folder / "models").mkdir(parents=True)
    (folder / "models" / "__init__.py").write_text("", encoding="utf-8")
    (folder / "models" / "hivt.py").write_text(MODEL.format(more=more), encoding="utf-8")
    (folder / "train.py").write_text(TRAIN, encoding="utf-8")
    return [f for f in check_file(folder / "train.py") if f.code == "DDP023"]


def test_a_parser_a_model_helper_extends_keeps_lightnings_one_node_and_the_scripts_gpus(tmp_path: Path) -> None:
    [found] = _layout(tmp_path)
    assert (found.line, found.confidence) == (12, "certain")
    assert "num_nodes=1" in found.message and "devices=1 (--gpus defaults to 1" in found.message
    assert [f.severity for f in across_nodes([found], 2, 8)] == ["error"]


def test_a_helper_that_adds_a_node_count_or_the_trainer_flags_leaves_it_unknown(tmp_path: Path) -> None:
    for i, more in enumerate(('        parser.add_argument("--num_nodes", type=int, default=1)\n',
                              "        parent_parser = pl.Trainer.add_argparse_args(parent_parser)\n")):
        found = _layout(tmp_path / str(i), more)  # then a flag's default, the gate's to judge with the flags passed
        assert found and all(f.confidence == "likely" and "(left out" not in f.message for f in found)
