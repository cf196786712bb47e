"""Whether a value is the launched world's size: what a test of it against one (``if world_size > 1:``) is a switch
between the distributed run and the run of one process on (``flow.Flow.dead_side``'s ``_many_side``).

The launcher's world size is read from its variable (``int(os.environ["WORLD_SIZE"])``), asked of the group
(``dist.get_world_size()``, or a project's ``get_world_size()`` helper), or held by a name whose every value is one of
those or the fallback of one process (``world_size = 1`` in the ``else`` of ``if "WORLD_SIZE" in os.environ:``), also
a name unpacked from what a function of the file returns (CryoNet's ``rank, world_size, local_rank = setup_ddp()``).
An attribute (``args.world_size``) is not followed: a flag's default (1) can stand where no launcher's value was read.
A world size of a subgroup (``get_world_size(group)``) is not the launched world's.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from orchestrator.source.exprnames import FunctionNode, last_name
from orchestrator.source.kwargs import argument
from orchestrator.source.names import Module
from orchestrator.source.ranknames import WORLD_ENV
from orchestrator.source.walk import walk

_DEPTH = 4


def launched_world(module: Module, expr: ast.expr, env_key: Callable[[ast.expr], str | None], depth: int = 0) -> bool:
    """Whether ``expr`` (of ``module``) holds the launched world's size; ``env_key`` reads ``os.environ["K"]``'s K."""
    while isinstance(expr, ast.Call) and last_name(expr.func) == "int" and len(expr.args) == 1:
        expr = expr.args[0]
    if env_key(expr) in WORLD_ENV:
        return True
    if isinstance(expr, ast.Call):
        return last_name(expr.func) == "get_world_size" and not expr.args and not expr.keywords
    if not isinstance(expr, ast.Name) or depth >= _DEPTH:
        return False
    worlds = [v for v in _values(module, expr) if not (isinstance(v, ast.Constant) and v.value == 1)]
    return bool(worlds) and all(launched_world(module, v, env_key, depth + 1) for v in worlds)


def group_of_one(init: ast.Call) -> bool:
    """``init_process_group(..., world_size=1)`` (by keyword, or the fourth positional argument): a group of one
    process, written in: it meets nobody, so neither its address nor its rank is a rendezvous."""
    size = argument(init, "world_size", 3)
    return isinstance(size, ast.Constant) and size.value == 1


def _values(module: Module, name: ast.Name) -> list[ast.expr]:
    """What ``name`` may hold where it is read: the value last assigned and the other side's of an if/else, or what
    the function it is unpacked from returns in its place."""
    found, value = module.resolve(name.id, name)
    if value is not None:
        return [value, *module.other_branch(name.id, name)]
    return _unpacked(module, name) if found else []


def _unpacked(module: Module, name: ast.Name) -> list[ast.expr]:
    """``rank, world_size, local_rank = setup_ddp()`` before ``name`` in its function: the values each ``return`` of
    the file's ``setup_ddp`` gives at ``world_size``'s place."""
    scope = module.function_of(name)
    best: tuple[ast.Assign, int] | None = None
    for node in module.nodes:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple)
                and isinstance(node.value, ast.Call) and node.lineno < name.lineno
                and module.function_of(node) is scope):
            continue
        index = next((i for i, e in enumerate(node.targets[0].elts) if isinstance(e, ast.Name) and e.id == name.id),
                     None)
        if index is not None and (best is None or node.lineno > best[0].lineno):
            best = (node, index)
    function: FunctionNode | None = module.local_function(best[0].value) if best is not None and isinstance(
        best[0].value, ast.Call) else None
    if best is None or function is None:
        return []
    return [r.value.elts[best[1]] for r in walk(function) if isinstance(r, ast.Return)
            and isinstance(r.value, ast.Tuple) and len(r.value.elts) > best[1] and module.function_of(r) is function]
