"""The ``if`` statements around a node, each with the side the node sits on: one walk up the parents that the
rules share (a device used on the undistributed side, a load beside a mapped one, a rank set in another branch,
a flag raised on rank 0's side), and whether anything but the script's main guard stands around it."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

from orchestrator.source.names import FunctionNode


def enclosing_ifs(parents: Mapping[ast.AST, ast.AST], node: ast.AST) -> Iterator[tuple[ast.If, bool]]:
    """Each ``if`` around ``node`` within its function, class or module, innermost first, with the side ``node``
    sits on (True: the body; an ``elif`` is the ``else`` of the ``if`` before it). An ``if`` whose test holds
    ``node`` is passed over."""
    child, current = node, parents.get(node)
    while current is not None and not isinstance(current, FunctionNode | ast.ClassDef | ast.Module):
        if isinstance(current, ast.If) and child is not current.test:
            yield current, child in current.body
        child, current = current, parents.get(current)


def other_side(statement: ast.If, in_body: bool) -> list[ast.stmt]:
    """The statements of the side of ``statement`` that the node on ``in_body``'s side never runs with."""
    return statement.orelse if in_body else statement.body


def main_guard(test: ast.expr) -> bool:
    """``if __name__ == "__main__":``'s test (its code runs only when the file is the script, never on import)."""
    text = ast.unparse(test)
    return "__name__" in text and "__main__" in text


def unconditional(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """No ``if``/loop/``try``/``with`` around ``node`` in its function (or module) but ``if __name__ == "__main__":``:
    it runs whenever its function (or the script) does."""
    current = parents.get(node)
    while current is not None and not isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module):
        if isinstance(current, ast.If) and main_guard(current.test):
            current = parents.get(current)
            continue
        if isinstance(current, ast.If | ast.For | ast.While | ast.Try | ast.With | ast.IfExp):
            return False
        current = parents.get(current)
    return True
