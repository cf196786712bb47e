"""A node-local rank shifted by its node's offset holds the global rank from there on:
``args.local_rank += args.node_index * args.gpu_per_node`` (CodeXGLUE's scripts, written for
``torch.distributed.launch`` on several nodes), ``rank += node_rank * ngpus_per_node``. The name still says
"local"; what it holds after the shift is the global rank (a guard ``if args.local_rank in [-1, 0]:`` is then
global rank 0's, not every node's).

A use is after the shift when it is later in the same function, or in another function (one the shifting function
calls once the ranks are set up). Pure: reads the module's syntax tree."""

from __future__ import annotations

import ast
import re
import weakref

from orchestrator.source.exprnames import dotted
from orchestrator.source.names import Module

# a name of the node's index (the offset's other factor is a per-node count)
_NODE = re.compile(r"(^|_)(node|machine)_?(index|rank|id|idx|num)$|^nr$|^node$", re.IGNORECASE)


def shifted(module: Module, expr: ast.expr) -> bool:
    """Whether ``expr`` (a name or an attribute chain) was shifted by its node's offset before this use."""
    key = dotted(expr)
    if key is None:
        return False
    here = module.function_of(expr)
    line = getattr(expr, "lineno", 0)
    return any(function is not here or line > at for function, at in _shifts(module).get(key, ()))


_SHIFTS: weakref.WeakKeyDictionary[Module, dict[str, list[tuple[ast.AST | None, int]]]] = weakref.WeakKeyDictionary()


def _shifts(module: Module) -> dict[str, list[tuple[ast.AST | None, int]]]:
    """key -> (its function, line) of each ``key += <node index> * <count>`` in the module (read once a module)."""
    if module in _SHIFTS:
        return _SHIFTS[module]
    found: dict[str, list[tuple[ast.AST | None, int]]] = {}
    for node in module.nodes:
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and _node_offset(node.value):
            key = dotted(node.target)
            if key is not None:
                found.setdefault(key, []).append((module.function_of(node), node.lineno))
    _SHIFTS[module] = found
    return found


def _node_offset(value: ast.expr) -> bool:
    """``node_index * gpu_per_node`` (either order), ``args.node_rank * args.ngpus``."""
    if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult)):
        return False
    names = [(dotted(side) or "").rsplit(".", 1)[-1] for side in (value.left, value.right)]
    return any(_NODE.search(name) for name in names if name)
