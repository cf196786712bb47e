"""The ``if`` statements around a node (orchestrator/source/branches.py): innermost first, each with the side the
node sits on, an ``elif`` as the ``else`` of the ``if`` before it, the test of an ``if`` passed over, and the walk
stopping at the node's function."""

from __future__ import annotations

import ast

import pytest

from orchestrator.source.branches import (
    catches,
    enclosing_ifs,
    env_presence,
    in_block_of,
    off_linux_side,
    other_side,
    statements_after,
    statements_before,
    under_main_guard,
)
from orchestrator.source.names import Module

SOURCE = """\
if outer:
    def train():
        if distributed:
            model = DDP(model)
        elif single:
            if check(x):
                model = model.cuda()
        else:
            pass
"""


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _call(tree: ast.AST, name: str) -> ast.Call:
    return next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func).endswith(name))


def test_the_ifs_around_a_node_innermost_first_with_their_sides() -> None:
    tree = ast.parse(SOURCE)
    parents = _parents(tree)
    found = [(ast.unparse(statement.test), in_body) for statement, in_body in
             enclosing_ifs(parents, _call(tree, "cuda"))]
    # `if check(x):` (body), `elif single:` (body), `if distributed:` (its else): not `if outer:`, outside train()
    assert found == [("check(x)", True), ("single", True), ("distributed", False)]


def test_a_node_in_the_test_is_not_on_either_side() -> None:
    tree = ast.parse(SOURCE)
    assert [ast.unparse(s.test) for s, _ in enclosing_ifs(_parents(tree), _call(tree, "check"))] == [
        "single", "distributed"]


def test_the_other_side_is_the_branch_the_node_never_runs_with() -> None:
    tree = ast.parse(SOURCE)
    statement, in_body = next(iter(enclosing_ifs(_parents(tree), _call(tree, "DDP"))))
    assert ast.unparse(statement.test) == "distributed" and in_body
    assert [ast.unparse(s)[:5] for s in other_side(statement, in_body)] == ["if si"]


@pytest.mark.parametrize(("test", "side"), [
    ("os.name == 'nt'", True), ("os.name != 'nt'", False), ("not os.name == 'nt'", False),
    ("sys.platform == 'win32'", True), ("sys.platform.startswith('win')", True), ("sys.platform == 'darwin'", True),
    ("platform.system() == 'Windows'", True), ("sys.platform == 'linux'", False),
    ("sys.platform.startswith('linux')", False), ("os.name == 'posix'", False),
    ("args.os == 'nt'", None), ("os.name in ('nt', 'ce')", None),  # not the system, or another shape: not told
])
def test_the_side_of_a_platform_test_a_linux_node_never_takes(test: str, side: bool | None) -> None:
    tree = ast.parse(f"import os, sys, platform\nif {test}:\n    pass\n")
    node = tree.body[1]
    assert isinstance(node, ast.If)
    assert off_linux_side(node.test, Module(tree).qualname) is side


@pytest.mark.parametrize(("test", "found"), [
    ('"SLURM_PROCID" in os.environ', ("SLURM_PROCID", True)),
    ('"WORLD_SIZE" not in os.environ', ("WORLD_SIZE", False)),
    ('os.environ.get("RANK") is not None', ("RANK", True)),
    ('os.getenv("LOCAL_RANK") is None', ("LOCAL_RANK", False)),
    ('env.get("RANK") is None', None),  # not the process's environment
    ('"RANK" in config', None),
    ('os.environ.get("RANK") == "0"', None),
])
def test_a_test_that_an_environment_variable_is_set(test: str, found: tuple[str, bool] | None) -> None:
    module = Module(ast.parse(f"import os\nif {test}:\n    pass\n"))
    statement = module.tree.body[1]
    assert isinstance(statement, ast.If)
    assert env_presence(module.qualname, statement.test) == found



def test_under_the_main_guard_however_deep() -> None:
    tree = ast.parse(
        "def helper():\n    launch()\n\n"
        "if __name__ == '__main__':\n    for i in range(2):\n        if i:\n            start(i)\n")
    parents = _parents(tree)
    assert under_main_guard(_call(tree, "start"), parents)  # a loop and an `if` between it and the guard
    assert not under_main_guard(_call(tree, "launch"), parents)  # runs whenever the module's function is called


@pytest.mark.parametrize(("handler", "takes"), [
    ("except:", True), ("except Exception:", True), ("except (KeyError, builtins.Exception):", True),
    ("except KeyError:", False), ("except (ImportError, KeyError) as e:", False),
])
def test_a_handler_takes_an_exception_by_its_class_name(handler: str, takes: bool) -> None:
    node = ast.parse(f"try:\n    pass\n{handler}\n    pass\n").body[0]
    assert isinstance(node, ast.Try)
    assert catches(node.handlers[0], frozenset({"Exception"})) is takes


def test_the_statements_around_one_are_those_of_the_block_that_holds_it() -> None:
    tree = ast.parse("try:\n    a = 1\n    b = 2\nexcept E:\n    c = 3\nelse:\n    d = 4\n    e = 5\n"
                     "finally:\n    f = 6\n    g = 7\n")
    statement = tree.body[0]
    assert isinstance(statement, ast.Try)
    unparsed = [[ast.unparse(s) for s in found] for found in (
        statements_before(statement, statement.body[1]), statements_after(statement, statement.body[0]),
        statements_after(statement, statement.orelse[0]), statements_before(statement, statement.finalbody[1]))]
    assert unparsed == [["a = 1"], ["b = 2"], ["e = 5"], ["f = 6"]]
    handler = statement.handlers[0]  # an except handler's statement is in the handler's body, not the try's
    assert statements_before(statement, handler.body[0]) == statements_after(statement, handler.body[0]) == []
    assert statements_after(handler, handler.body[0]) == [] and statements_after(None, statement) == []


def test_a_read_in_the_block_of_an_assignment_and_one_after_its_if() -> None:
    tree = ast.parse("if d:\n    rank = int(r)\nelse:\n    rank = 0\n    local = rank\nuse(rank)\n")
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    zero = next(n for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value == 0)
    reads = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "rank" and isinstance(n.ctx, ast.Load)]
    inside, after = sorted(reads, key=lambda n: n.lineno)
    assert in_block_of(parents, zero, inside) is True
    assert in_block_of(parents, zero, after) is False
