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


_LOCAL = """\
def train_one_epoch(model, logger, steps=3):
    logger.info(steps)
    steps = 4
    model.step(steps)


train_one_epoch(net, log)
train_one_epoch(other, logger=make_logger(rank))
"""


def _reads(tree: ast.Module, name: str, line: int) -> ast.Name:
    return next(n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name and n.lineno == line)


def test_a_parameter_is_what_the_files_calls_hand_it() -> None:
    tree = ast.parse(_LOCAL)
    script = Analysis(tree, "<string>")
    handed = script.handed(_reads(tree, "logger", 2))
    assert handed is not None and [ast.unparse(v) for v in handed] == ["log", "make_logger(rank)"]


def test_a_parameter_assigned_in_its_function_or_a_global_is_not_handed() -> None:
    tree = ast.parse(_LOCAL)
    script = Analysis(tree, "<string>")
    assert script.handed(_reads(tree, "steps", 4)) is None  # steps = 4 above it
    assert script.handed(_reads(tree, "net", 7)) is None  # not in a function
