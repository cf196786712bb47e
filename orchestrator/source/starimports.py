"""``from module import *`` in a script's project: which modules a module takes every name of, and which names."""

from __future__ import annotations

import ast

from orchestrator.source.names import Module


def star_sources(module: Module, package: str | None) -> list[str]:
    """The modules ``module`` takes every name of (``from .build import *``, ``from pkg.misc import *``), as
    absolute names, in import order."""
    out: list[str] = []
    for node in module.tree.body:
        if not (isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names)):
            continue
        if not node.level:
            out += [node.module] if node.module else []
            continue
        base = package.split(".") if package else []
        base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
        if base:
            out.append(".".join([*base, *([node.module] if node.module else [])]))
    return out


def dunder_all(tree: ast.Module) -> set[str] | None:
    """The names of a module's literal ``__all__``; None where it has none."""
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets) \
                and isinstance(stmt.value, ast.List | ast.Tuple):
            return {e.value for e in stmt.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return None
