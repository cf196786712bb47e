"""Where a framework layout's argument comes from (``layoutvalues.resolve_layout``), as DDP023 says it (beside the
node count left out, which makes it certain): a parameter's default, a flag's default through ``int(...)``, an
if/else whose one side a flag sets, and the launcher's environment (which follows the launch: no finding)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import Finding, check_file


def layout_findings(tmp_path: Path, text: str) -> list[Finding]:
    (tmp_path / "train.py").write_text(text)
    return [f for f in check_file(tmp_path / "train.py") if f.code == "DDP023"]


@pytest.mark.parametrize(("script", "line", "said"), [
    ("""
import lightning.pytorch as pl
def main(devices=4):
    trainer = pl.Trainer(devices=devices, strategy="ddp")
    trainer.fit(object())
main()
""", 4, "devices=4 (main's devices defaults to 4: a parameter's default)"),
    ("""
import argparse
import lightning.pytorch as pl
p = argparse.ArgumentParser()
p.add_argument("--gpus", type=int, default=2)
args = p.parse_args()
trainer = pl.Trainer(devices=int(args.gpus), strategy="ddp")
trainer.fit(object())
""", 7, "devices=2 (--gpus defaults to 2"),  # a flag's default, read through int()
])
def test_a_parameters_or_flags_default_fixes_the_device_count(tmp_path: Path, script: str, line: int,
                                                                said: str) -> None:
    found = layout_findings(tmp_path, script)
    assert [(f.line, f.confidence) for f in found] == [(line, "certain")]
    assert said in found[0].message


def test_the_side_of_an_if_else_a_flag_sets_is_the_one_said(tmp_path: Path) -> None:
    found = layout_findings(tmp_path, """
import argparse
import lightning.pytorch as pl
p = argparse.ArgumentParser()
p.add_argument("--ngpu", type=int, default=3)
args = p.parse_args()
if args.ngpu == 0:
    devices = "auto"
else:
    devices = args.ngpu
trainer = pl.Trainer(devices=devices, strategy="ddp")
trainer.fit(object())
""")
    assert ["devices=3 (--ngpu defaults to 3" in f.message for f in found] == [True]


def test_a_node_count_from_the_launchers_environment_follows_the_launch(tmp_path: Path) -> None:
    assert layout_findings(tmp_path, """
import os
import lightning.pytorch as pl
trainer = pl.Trainer(devices="auto", num_nodes=int(os.environ.get("SLURM_NNODES", 1)), strategy="ddp")
trainer.fit(object())
""") == []
