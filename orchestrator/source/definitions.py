"""Where a function or class is defined in a module's body: at its top level, or under an ``if``/``try`` that picks
one of two definitions (``if HAS_APEX: def f(): ...``, ``try: ... except ImportError: def f(): ...``)."""

from __future__ import annotations

import ast

from orchestrator.source.exprnames import FunctionNode
from orchestrator.source.names import Module


def definition(module: Module, name: str) -> FunctionNode | ast.ClassDef | None:
    """The function or class ``module`` defines as ``name``, or None."""
    return definition_in(module.tree.body, name)


def definition_in(body: list[ast.stmt], name: str) -> FunctionNode | ast.ClassDef | None:
    """The function or class ``body`` defines as ``name`` (a class's body: its method), or None."""
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and stmt.name == name:
            return stmt
        if isinstance(stmt, ast.If | ast.Try):  # `if HAS_X: def f(): ...`, `try: ... except: def f()`
            for block in (stmt.body, stmt.orelse, *[h.body for h in getattr(stmt, "handlers", [])]):
                found = definition_in(block, name)
                if found is not None:
                    return found
    return None
