"""DDP020 on some ranks: a name bound only where global rank 0 runs, read where other ranks run too.

EAGLE's trainer: ``if accelerator.is_main_process: import wandb`` at the top, then ``if
accelerator.is_local_main_process: wandb.log(...)`` each epoch: on one node the same process, on two the second
node's first process meets a name nothing bound there (a NameError after the first epoch). Also a writer or a file
made under ``if rank == 0:`` and used with no rank test. pyflakes cannot see it: the name is bound in the file.

Read within one scope (the module's statements, or one function's), where every binding of the name (an
assignment, an import, a ``for``/``with`` target) sits on the body side of an ``if`` true on global rank 0 alone
(``is_main_process``, ``rank == 0`` of the global rank; not a local-rank test), and a later read of it sits under no
such test: under none at all (every other rank), or under a local-rank test only (each other node's first process).
Not reported: a name bound on another path too before the read (``writer = None`` first, an ``else``; not the
statement's own binding whose value reads it: ``x, = prepare(x)``), a comprehension's variable, a parameter, a scope
where the other ranks leave early (``if rank != 0: return``), a read in a nested function (its callers are not
followed).
A warning, likely: the read may sit behind a condition only rank 0 meets that the reader does not see.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import replace

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.rules_saves import guard_kind
from orchestrator.source.branches import enclosing_ifs, inside
from orchestrator.source.exprnames import FunctionNode
from orchestrator.source.walk import walk

_SCOPE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_SCOPE_OR_MODULE = (*_SCOPE, ast.Module)
_EXITS = (ast.Return, ast.Continue, ast.Break, ast.Raise)


def check_rank_bound_names(a: Analysis) -> Iterator[Finding]:
    functions = [n for n in a.module.nodes if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    scopes: list[ast.Module | FunctionNode] = [a.module.tree, *functions]
    for scope in scopes:
        yield from _in_scope(a, scope)


def _in_scope(a: Analysis, scope: ast.Module | FunctionNode) -> Iterator[Finding]:
    nodes = list(_own_nodes(scope))
    if any(isinstance(n, ast.If) and _others_leave(a, n) for n in nodes):
        return  # `if rank != 0: return`: what follows runs on rank 0 alone
    params = {p.arg for p in walk(scope.args) if isinstance(p, ast.arg)} if not isinstance(scope, ast.Module) else set()
    bound: dict[str, list[ast.AST]] = {}
    for node in nodes:
        for name in _binds(node):
            bound.setdefault(name, []).append(node)
    seen: set[str] = set()
    zero_guard = functools.cache(lambda binder: _zero_guard(a, binder))  # each binding's guard, read once
    for node in sorted(nodes, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)) or node.id in seen:
            continue
        if _comprehension_bound(a, node):
            continue
        # the bindings made before this read: not one later, nor the statement's own whose value reads it first
        # (VITS's ``net_g, ..., eval_dataset, ... = accelerator.prepare(..., eval_dataset, ...)``)
        binders = [b for b in bound.get(node.id, []) if getattr(b, "lineno", 0) <= node.lineno
                   and not _assigned_from(a, b, node)]
        guards = [zero_guard(b) for b in binders]
        if not binders or node.id in params or any(g is None for g in guards):
            continue
        if any(inside(a.module.parents, node, g) for g in guards if g is not None):
            continue
        reach = _read_by(a, node)
        if reach is None:
            continue
        seen.add(node.id)
        guard = guards[0]
        assert guard is not None
        found = a.finding("DDP020", node, f"{node.id!r} is bound only where `{ast.unparse(guard.test)[:40]}` holds "
                                          f"(line {guard.lineno}) and read {reach}: a NameError there",
                          severity="warning", confidence="likely")
        yield replace(found, fix=f"bind {node.id} on every rank (its import or assignment before line "
                                 f"{guard.lineno}'s test), or read it only under that test "
                                 f"(if {ast.unparse(guard.test)[:40]}:)")


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``scope``'s own statements, not those of the functions and classes defined in it."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPE):
            stack.extend(ast.iter_child_nodes(node))


def _binds(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
        return [node.id]
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names if alias.name != "*"]
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    if isinstance(node, ast.Global | ast.Nonlocal):
        return list(node.names)  # bound elsewhere: never the one binding
    return []


def _comprehension_bound(a: Analysis, read: ast.Name) -> bool:
    """``read`` is the variable of a comprehension around it (``any(v in data for v in keys)``): its own scope's."""
    current = a.module.parents.get(read)
    while current is not None and not isinstance(current, _SCOPE_OR_MODULE):
        if isinstance(current, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) and any(
                isinstance(n, ast.Name) and n.id == read.id for g in current.generators for n in walk(g.target)):
            return True
        current = a.module.parents.get(current)
    return False


def _assigned_from(a: Analysis, binder: ast.AST, read: ast.Name) -> bool:
    """``binder`` is a target of the assignment whose value holds ``read``: bound after that read."""
    statement = binder
    while not isinstance(statement, ast.stmt) and (parent := a.module.parents.get(statement)) is not None:
        statement = parent
    value = statement.value if isinstance(statement, ast.Assign | ast.AugAssign | ast.AnnAssign) else None
    return value is not None and (value is read or inside(a.module.parents, read, value))


def _zero_guard(a: Analysis, node: ast.AST) -> ast.If | None:
    """The ``if`` whose body holds ``node`` and whose test holds on global rank 0 alone; None where ``node`` is
    bound under none (it is then bound on every rank, or where the reader cannot tell)."""
    if isinstance(node, ast.Global | ast.Nonlocal):
        return None
    return next((s for s, in_body in enclosing_ifs(a.module.parents, node) if in_body and _kind(a, s.test) == "global"),
                None)


def _kind(a: Analysis, test: ast.expr) -> str | None:
    """``global`` for a test true on global rank 0 alone, ``local`` for one true on each node's first process,
    None for anything else (a flag, a test true on many ranks)."""
    if not a.ranks.is_condition(test) or a.ranks.at_rank_zero(test) is not True or a.ranks.passes_many(test, True):
        return None
    parts = [n for n in walk(test) if isinstance(n, ast.Name | ast.Attribute | ast.Call)]
    kinds = {guard_kind(a, n) for n in parts} & {"global", "local"}
    return kinds.pop() if len(kinds) == 1 else None


def _read_by(a: Analysis, node: ast.Name) -> str | None:
    """Which other ranks reach ``node``: ``with no rank test`` (every rank), ``under a local-rank test`` (each
    other node's first process); None where a global rank-0 test (or a test the reader cannot tell) stands around it."""
    local = None
    child: ast.AST = node
    current = a.module.parents.get(node)
    while current is not None and not isinstance(current, _SCOPE_OR_MODULE):
        if isinstance(current, ast.If | ast.IfExp | ast.While) and child is not current.test:
            kind = _kind(a, current.test)
            if kind == "global" or (kind is None and a.ranks.is_condition(current.test)):
                return None
            if kind == "local":
                local = current
        if isinstance(current, ast.BoolOp) and child is not current.values[0]:
            return None  # `rank == 0 and wandb.log(...)`: the test before it is not read here
        child, current = current, a.module.parents.get(current)
    if local is not None:
        return f"under `{ast.unparse(local.test)[:40]}` (line {local.lineno}), each node's first process"
    return "with no rank test, on every rank"


def _others_leave(a: Analysis, node: ast.If) -> bool:
    """``if rank != 0: return`` (or ``continue``/``break``/``raise``): the other ranks leave the scope there."""
    return bool(node.body) and isinstance(node.body[-1], _EXITS) and a.ranks.is_condition(node.test) and (
        a.ranks.at_rank_zero(node.test) is False)
