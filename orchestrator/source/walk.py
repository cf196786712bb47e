"""``ast.walk`` read once per node: the doctor's rules walk the same trees (a module, a function) dozens of times
per script, and Python's walk was half of a check's time on a 1,800-line script. The descendants are kept on the
node itself, so a tree's cache lives exactly as long as the tree; the trees read here are never changed after
parsing (new nodes are built, e.g. rankcompare's folds, never edited in place)."""

from __future__ import annotations

import ast

_KEY = "_orch_walk"


def walk(node: ast.AST) -> tuple[ast.AST, ...]:
    """``node`` and every node under it, in ``ast.walk``'s order (breadth first)."""
    found: tuple[ast.AST, ...] | None = node.__dict__.get(_KEY)
    if found is None:
        found = tuple(ast.walk(node))
        setattr(node, _KEY, found)
    return found
