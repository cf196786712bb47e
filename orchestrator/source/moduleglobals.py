"""A module-level name's values: what the module assigns it at its top level, and what its functions assign it under
``global NAME`` (Segmenter's ``segm/utils/torch.py``: ``dist_rank = 0``, then ``set_gpu_mode()`` says ``global
dist_rank`` and assigns ``int(os.environ.get("SLURM_PROCID", 0))``). Another module that reads ``ptu.dist_rank`` after
that call sees the value set there: ``source/ranks.py`` reads it so."""

from __future__ import annotations

import ast

from orchestrator.source.exprnames import FunctionNode
from orchestrator.source.walk import walk


def global_values(tree: ast.Module, name: str) -> list[ast.expr]:
    """The values ``tree`` assigns to its module-level ``name``: at the top level (also in its ``if``/``try``
    blocks), then in each function that declares it ``global``, in the order written."""
    out: list[ast.expr] = []
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop(0)
        if isinstance(node, FunctionNode | ast.ClassDef):
            continue
        out += _assigned(node, name)
        stack[:0] = [s for field in ("body", "orelse", "finalbody") for s in getattr(node, field, [])
                     if isinstance(s, ast.stmt)] + [s for h in getattr(node, "handlers", []) for s in h.body]
    for function in walk(tree):
        if isinstance(function, FunctionNode) and any(
                isinstance(n, ast.Global) and name in n.names for n in _own(function)):
            out += [v for n in _own(function) if isinstance(n, ast.stmt) for v in _assigned(n, name)]
    return out


def _assigned(node: ast.stmt, name: str) -> list[ast.expr]:
    """The value ``node`` assigns to ``name`` itself (``name = v``, ``name: T = v``), if it does."""
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
        return [node.value]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name and node.value:
        return [node.value]
    return []


def _own(function: FunctionNode) -> list[ast.AST]:
    """The nodes of ``function`` outside the functions and classes it defines."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, FunctionNode | ast.ClassDef | ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))
    return out
