"""A spawner for one node as a fact: the function a spawn starts hands its spawn index, unchanged, to
``init_process_group(rank=...)`` (itself or through the functions of its file it passes the index to:
``def main_worker(rank, args): training(rank, args)``, ``device = rank``, ``init_process_group(..., rank=device)``).

The spawn index is the rank on its node: started once per node (the ``per-node`` style), every node's processes claim
ranks 0..nprocs-1 of one world, so such a script works on one node only. Not a fact when the rank is built from the
index (``rank = args.nr * args.gpus + gpu``: a node's offset) or the index is given another value before it is
passed on.
"""

from __future__ import annotations

import ast

from orchestrator.source.analysis import Analysis
from orchestrator.source.names import FunctionNode, Module, last_name

_DEPTH = 3


def index_as_rank(a: Analysis, spawn: ast.Call) -> tuple[str, ast.Call] | None:
    """(its file, the ``init_process_group`` call) that takes ``spawn``'s index (the started function's first
    parameter) as its rank, or None. The started function is the file's own or one it imports from the script's
    project (``from utils.train import train``; ``mp.spawn(train, ...)``)."""
    target = spawn.args[0] if spawn.args else next((k.value for k in spawn.keywords if k.arg == "fn"), None)
    found = _started(a, target) if isinstance(target, ast.Name) else None
    if found is None:
        return None
    file, module, function = found
    params = _params(function)
    init = _reaches(module, function, params[0], 0, set()) if params else None
    return (file, init) if init is not None else None


def _started(a: Analysis, target: ast.Name) -> tuple[str, Module, FunctionNode] | None:
    """(file, module, function) of the function a spawn starts: this file's, or the project module's it imports."""
    local = a.module.functions.get(target.id)
    if local is not None:
        return a.filename, a.module, local
    project = a.project if a.project is not None else a.outer.project if a.outer is not None else None
    qual = a.module.qualname(target)
    where = project.split(qual) if project is not None and qual is not None else None
    if project is None or where is None:
        return None
    path, name = where
    module = project.read(path)
    function = module.functions.get(name) if module is not None else None
    return (str(path), module, function) if module is not None and function is not None else None


def _params(function: FunctionNode) -> list[str]:
    return [p.arg for p in (*function.args.posonlyargs, *function.args.args)]


def _reaches(module: Module, function: FunctionNode, param: str, depth: int, seen: set[str]) -> ast.Call | None:
    if depth > _DEPTH or function.name in seen:
        return None
    seen.add(function.name)
    parents = {child: node for node in ast.walk(function) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(function):
        if not isinstance(node, ast.Call):
            continue
        if last_name(node.func) == "init_process_group":
            rank = next((k.value for k in node.keywords if k.arg == "rank"), None)
            if isinstance(rank, ast.Name) and _holds(rank.id, node, param, parents, 0):
                return node
            continue
        callee = module.local_function(node)
        if callee is None or callee is function:
            continue
        params = _params(callee)
        for index, arg in enumerate(node.args[:len(params)]):
            if isinstance(arg, ast.Name) and _holds(arg.id, node, param, parents, 0):
                found = _reaches(module, callee, params[index], depth + 1, seen)
                if found is not None:
                    return found
    return None


def _holds(name: str, at: ast.AST, param: str, parents: dict[ast.AST, ast.AST], depth: int) -> bool:
    """``name`` holds the index where ``at`` runs: its last assignment in the blocks around ``at`` copies a name
    that holds it (``device = rank``), or none assigns it and it is the index's parameter."""
    child, current = at, parents.get(at)
    while current is not None and depth <= _DEPTH:
        for block in ("body", "orelse", "finalbody"):
            statements = getattr(current, block, None)
            if not (isinstance(statements, list) and child in statements):
                continue
            for earlier in reversed(statements[:statements.index(child)]):
                value = _assigned(earlier, name)
                if value is not None:
                    return isinstance(value, ast.Name) and _holds(value.id, earlier, param, parents, depth + 1)
        child, current = current, parents.get(current)
    return name == param


def _assigned(statement: ast.stmt, name: str) -> ast.expr | None:
    """The value ``statement`` gives ``name`` (``x += 1`` and a tuple target: itself, another value), or None."""
    if isinstance(statement, ast.Assign):
        for target in statement.targets:
            if isinstance(target, ast.Name) and target.id == name:
                return statement.value
            if isinstance(target, ast.Tuple | ast.List) and any(isinstance(e, ast.Name) and e.id == name
                                                                 for e in target.elts):
                return target
    if isinstance(statement, ast.AugAssign | ast.AnnAssign) and isinstance(statement.target, ast.Name) and (
            statement.target.id == name):
        annotated = isinstance(statement, ast.AnnAssign) and statement.value is not None
        return statement.value if annotated and statement.value is not None else statement.target
    return None
