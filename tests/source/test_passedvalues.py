"""What a parameter holds when every call hands it a constant (orchestrator/source/passedvalues.py): the file's calls,
the script's calls of a helper's function and the parameter's default; anything else makes it unknown."""

from __future__ import annotations

import ast
from pathlib import Path

from orchestrator.source.analysis import Analysis
from orchestrator.source.passedvalues import passed_constants

HELPER = """\
import os


def ddp_setup(rank, world_size, master_addr="localhost", *, port=12355):
    os.environ["MASTER_ADDR"] = master_addr
    os.environ["MASTER_PORT"] = str(port)
    print(rank)
"""


def _held(helper: str, script: str) -> dict[str, list[object]]:
    outer = Analysis(ast.parse(script), str(Path("main.py")))
    a = Analysis(ast.parse(helper), str(Path("utils.py")), outer=outer)
    names = [n for n in a.module.nodes if isinstance(n, ast.Name) and n.id in ("master_addr", "port", "rank")
             and isinstance(n.ctx, ast.Load)]
    return {n.id: [c.value for c in passed_constants(a, n)] for n in names}


def test_the_scripts_calls_and_the_default_together() -> None:
    held = _held(HELPER, "from utils import ddp_setup\nddp_setup(0, 2, master_addr='127.0.0.1', port=29500)\n")
    assert held == {"master_addr": ["127.0.0.1", "localhost"], "port": [29500, 12355], "rank": [0]}


def test_a_value_that_is_not_written_in_makes_the_parameter_unknown() -> None:
    held = _held(HELPER, "import os\nfrom utils import ddp_setup\n"
                         "ddp_setup(int(os.environ['RANK']), 2, master_addr=os.environ['HEAD'], port=True)\n")
    assert held == {"master_addr": [], "port": [], "rank": []}


def test_with_no_call_only_a_default_says() -> None:
    assert _held(HELPER, "") == {"master_addr": ["localhost"], "port": [12355], "rank": []}
