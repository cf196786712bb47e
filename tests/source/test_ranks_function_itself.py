"""A function named in a test but never called (``if is_main_process:``) is the function object, true on every rank:
no rank condition (MLPerf UNet3D's ``main.py``, whose logs under it then run everywhere). Called, or a value a rank test
returned, it is one."""

from __future__ import annotations

import ast

import pytest

from orchestrator.source.exprnames import FunctionNode
from orchestrator.source.names import Module
from orchestrator.source.ranks import Ranks

SCRIPT = """
import torch.distributed as dist
from utils.dist import is_master


def is_main_process():
    return dist.get_rank() == 0


main = is_main_process()
if is_main_process:
    log("uncalled")
if is_main_process():
    log("called")
if main:
    log("a value")
if is_master:
    log("imported, uncalled")
"""


def _tests(project: bool) -> dict[str, bool]:
    module = Module(ast.parse(SCRIPT))
    ranks = Ranks(module)
    helper = Module(ast.parse("import torch.distributed as dist\n\n"
                              "def is_master():\n    return dist.get_rank() == 0\n"))

    def function(qual: str) -> tuple[Module, FunctionNode] | None:
        return (helper, helper.top_functions["is_master"]) if qual == "utils.dist.is_master" else None

    ranks.project = function if project else None
    return {ast.unparse(node.test): ranks.is_condition(node.test) for node in module.tree.body
            if isinstance(node, ast.If)}


def test_a_function_of_the_file_named_but_not_called_is_no_rank_condition() -> None:
    found = _tests(project=True)
    assert found["is_main_process"] is False
    assert found["is_main_process()"] is True
    assert found["main"] is True


@pytest.mark.parametrize(("project", "condition"), [(True, False), (False, True)])
def test_an_imported_project_function_uncalled_is_none_either(project: bool, condition: bool) -> None:
    # where the project's module cannot be read, the name alone still says "main rank": kept as a condition
    assert _tests(project)["is_master"] is condition
