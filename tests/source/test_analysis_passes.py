"""``Analysis.passes_for``: what a script's calls pass for a parameter of a function defined in another file (a
project helper's), the one reading the launch rules, the saves and the spawn styles share: by position (a method's
``self`` bound) and by keyword, whether called by its name or as a module's attribute."""

from __future__ import annotations

import ast

from orchestrator.source.analysis import Analysis

_HELPER = """\
def save_model(net, optimizer, epoch, work_dir):
    pass


class Runner:
    def launch(self, fn, world):
        pass
"""

_SCRIPT = """\
import helpers
from helpers import save_model

save_model(ddp, opt, 1, "out")
helpers.save_model(opt=None, net=wrapped, epoch=2, work_dir="out")
runner.launch(train, 2)
runner.launch(world=2, fn=evaluate)
print(ddp)
"""


def _helper(name: str) -> ast.FunctionDef:
    found = next(n for n in ast.walk(ast.parse(_HELPER)) if isinstance(n, ast.FunctionDef) and n.name == name)
    assert isinstance(found, ast.FunctionDef)
    return found


def test_positions_and_keywords_of_a_function_called_by_name_or_as_an_attribute() -> None:
    script = Analysis(ast.parse(_SCRIPT), "<string>")
    assert [ast.unparse(v) for v in script.passes_for(_helper("save_model"), "net")] == ["ddp", "wrapped"]
    assert [ast.unparse(v) for v in script.passes_for(_helper("save_model"), "epoch")] == ["1", "2"]
    assert script.passes_for(_helper("save_model"), "missing") == []


def test_a_methods_self_is_bound() -> None:
    script = Analysis(ast.parse(_SCRIPT), "<string>")
    assert [ast.unparse(v) for v in script.passes_for(_helper("launch"), "fn")] == ["train", "evaluate"]
    assert [ast.unparse(v) for v in script.passes_for(_helper("launch"), "world")] == ["2", "2"]
