"""A Lightning Trainer given a plain parser's flags (``Trainer(**vars(args))``, ``vars(groups["Trainer"])``) in a file
where nothing declares a node count (orchestrator/doctor/layoutflags.py's ``spread_without_nodes``): num_nodes is left
out, one node whatever is passed, refused across nodes; a model's own ``add_argparse_args`` is not Lightning's Trainer
flags (no ``--num_nodes`` to pass)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file, check_source
from orchestrator.doctor.feasibility import across_nodes
from orchestrator.doctor.findings import Finding

_GROUPS = """import pytorch_lightning as pl
from argparse import ArgumentParser
from model import ScoreModel, split_groups

parser = ArgumentParser()
group = parser.add_argument_group("Trainer")
group.add_argument("--accelerator", type=str, default="gpu")
group.add_argument("--devices", default="auto")
ScoreModel.add_argparse_args(parser.add_argument_group("ScoreModel"))
args = parser.parse_args()
groups = split_groups(parser)
{extra}
trainer = pl.Trainer(**vars({spread}), strategy="ddp", log_every_n_steps=10)
trainer.fit(ScoreModel(**vars(groups["ScoreModel"])))
"""


def layout(source: str) -> list[Finding]:
    return [f for f in check_source(source, "train.py") if f.code == "DDP023"]


@pytest.mark.parametrize("spread", ['groups["Trainer"]', "args"], ids=["a-group-of-the-flags", "all-the-flags"])
def test_flags_with_no_node_count_leave_one_node(spread: str) -> None:
    [found] = layout(_GROUPS.format(extra="", spread=spread))
    assert (found.line, found.confidence) == (13, "certain")
    assert "num_nodes=1 (left out: the flags spread in have no --num_nodes" in found.message
    assert "--num_nodes defaults to 1" not in found.message  # the model's add_argparse_args adds no --num_nodes
    assert [f.severity for f in across_nodes([found], 2, 8)] == ["error"]
    assert [f.severity for f in across_nodes([found], 1, 8)] == ["warning"]


@pytest.mark.parametrize(("extra", "confidence"), [
    ("pl.Trainer.add_argparse_args(parser)", "likely"),  # Lightning's flags: --num_nodes 1 unless passed
    ('group.add_argument("--num_nodes", type=int, default=1)', "likely"),  # the script's own flag
    ("args.num_nodes = int(os.environ['SLURM_NNODES'])", None),  # a node count given to the namespace
], ids=["trainer-flags-added", "own-node-flag", "node-count-set"])
def test_a_node_count_somewhere_in_the_file_is_not_left_out(extra: str, confidence: str | None) -> None:
    found = layout(_GROUPS.format(extra=extra, spread="args"))
    assert [f.confidence for f in found] == ([confidence] if confidence else [])
    assert all("left out: the flags spread in" not in f.message for f in found)


@pytest.mark.parametrize("made", ["load_config(sys.argv[1])", "ArgumentParser(parents=[base]).parse_args()"],
                         ids=["a-config", "a-parser-with-parents"])
def test_a_namespace_not_from_a_plain_parser_here_is_not_known(made: str) -> None:
    source = _GROUPS.format(extra=f"import sys\nbase = None\ncfg = {made}", spread="cfg")
    assert [f.confidence for f in layout(source) if "left out: the flags spread in" in f.message] == []


_MODEL = """class ScoreModel:
    @staticmethod
    def add_argparse_args(parser):
        parser.add_argument("--{flag}", type=int, default=1)
        return parser


def split_groups(parser):
    return {{}}
"""


@pytest.mark.parametrize(("flag", "left_out"), [("num_nodes", False), ("sigma_min", True)])
def test_a_project_module_that_may_declare_the_node_flag_is_read(tmp_path: Path, flag: str, left_out: bool) -> None:
    (tmp_path / "model.py").write_text(_MODEL.format(flag=flag), encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text(_GROUPS.format(extra="", spread="args"), encoding="utf-8")
    found = [f for f in check_file(script) if f.code == "DDP023"]
    assert any("left out: the flags spread in" in f.message for f in found) is left_out
