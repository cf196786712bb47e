"""A Lightning layout taken from the script's own flags (orchestrator/doctor/layoutflags.py): warned with the exact
``-- ...`` to pass when the flags' values (their defaults, or what is passed) do not match the layout asked; silent
once they are passed, for a per-node script, and for literal layouts (the planners judge those)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import cluster_file

from orchestrator.cli import main
from orchestrator.doctor.layoutflags import flag_layout_warning

_SCRIPT = """import argparse
import lightning as L

parser = argparse.ArgumentParser()
parser.add_argument("--num_nodes", type=int, default=1)
parser.add_argument("--devices", type=int, default=1)
args = parser.parse_args()
trainer = L.Trainer({layout})
"""


@pytest.mark.parametrize(("layout", "args", "style", "hint"), [
    ("num_nodes=args.num_nodes, devices=args.devices", [], "env", "-- --num_nodes 2 --devices 8"),
    ("num_nodes=args.num_nodes, devices=args.devices", ["--num_nodes", "2"], "env", "-- --devices 8"),
    ("num_nodes=args.num_nodes, devices=args.devices", ["--num_nodes=2", "--devices", "8"], "env", None),
    ("num_nodes=args.num_nodes, devices=args.devices", [], "per-node", None),  # its task is not a rank
    ("num_nodes=2, devices=8", [], "env", None),  # literals: the planners' check
])
def test_a_layout_from_flags_is_warned_until_they_are_passed(tmp_path: Path, layout: str, args: list[str],
                                                             style: str, hint: str | None) -> None:
    script = tmp_path / "train.py"
    script.write_text(_SCRIPT.format(layout=layout), encoding="utf-8")
    warning = flag_layout_warning(script, style, 2, 8, args)
    if hint is None:
        assert warning is None
    else:
        assert warning is not None and warning.endswith(f"HINT: pass the flags after --: {hint}")
        assert "train.py:8: trainer = L.Trainer(" in warning and "2 node(s) x 8 rank(s)" in warning


def test_lightnings_own_flags_size_a_trainer_made_from_them(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import argparse\nimport pytorch_lightning as pl\nparser = argparse.ArgumentParser()\n"
                      "parser = pl.Trainer.add_argparse_args(parser)\nargs = parser.parse_args()\n"
                      "trainer = pl.Trainer.from_argparse_args(args, max_epochs=3)\n", encoding="utf-8")
    warning = flag_layout_warning(script, "env", 2, 8, [])
    assert warning is not None and warning.endswith("-- --num_nodes 2")
    assert flag_layout_warning(script, "env", 1, 8, []) is None


def test_orch_submit_warns_and_is_silent_with_the_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "train.py"
    script.write_text(_SCRIPT.format(layout="num_nodes=args.num_nodes, devices=args.devices"), encoding="utf-8")
    argv = ["submit", str(script), "--cluster", str(cluster_file(tmp_path)), "--nodes", "2", "--gpus", "2",
            "--dry-run"]
    assert main(argv) == 0
    assert "HINT: pass the flags after --: -- --num_nodes 2 --devices 2" in capsys.readouterr().err
    assert main([*argv, "--", "--num_nodes", "2", "--devices", "2"]) == 0
    assert "layout comes from the script's flags" not in capsys.readouterr().err
