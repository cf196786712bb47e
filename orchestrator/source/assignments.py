"""The last value a name or attribute is given before a statement, in the blocks around it: one owner for "what does
``args.rank`` hold where the group is joined" (the spawn index: ``args.rank = gpu``) and "what does the spawn hand its
workers" (``args.world_size = ngpus_per_node`` just before ``mp.spawn``). Walking back from the statement, out through
each enclosing block up to its function (or class): the first statement that assigns the name decides; a block in
between that may assign it (or, for an attribute, a call handed its object) leaves it unknown."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Literal

from orchestrator.source.branches import statements_before
from orchestrator.source.exprnames import FunctionNode, dotted, last_name
from orchestrator.source.walk import walk

# calls that only read the object they are handed (``pprint.pprint(vars(args))``, ``logger.info(args)``)
_READ_ONLY = frozenset({"print", "pprint", "vars", "str", "repr", "len", "getattr", "hasattr", "isinstance", "format",
                        "dumps", "info", "debug", "warning", "error", "log"})


def assignment_before(name: str, at: ast.AST, parents: Mapping[ast.AST, ast.AST]) -> ast.stmt | Literal[False] | None:
    """The statement that last gives ``name`` (``rank``, ``args.rank``) a value before ``at`` in the blocks around it,
    up to the enclosing function or class; False where a statement in between may give it another value
    (``may_change``); None where nothing there assigns it (a parameter, a global, an attribute set elsewhere)."""
    child, current = at, parents.get(at)
    while current is not None:
        for earlier in reversed(statements_before(current, child)):
            if assigned(earlier, name) is not None:
                return earlier
            if may_change(earlier, name):
                return False
        if isinstance(current, FunctionNode | ast.ClassDef):
            return None
        child, current = current, parents.get(current)
    return None


def may_change(statement: ast.stmt, name: str) -> bool:
    """``statement`` may give ``name`` another value: a block that assigns it inside (not an ``if`` that only does so
    while it is unset: ``if args.rank == -1: args.rank = int(os.environ["RANK"])`` after ``args.rank = gpu``), or, for
    an attribute (``args.rank``), a call handed its object (``init_distributed_mode(args)`` may set it; not one that
    only reads it: ``print(args)``, ``pprint.pprint(vars(args))``)."""
    if isinstance(statement, ast.If) and _unset_test(statement.test, name):
        return False
    inner = [n for n in walk(statement) if isinstance(n, ast.stmt) and n is not statement]
    if any(assigned(n, name) is not None for n in inner):
        return True
    owner = name.rpartition(".")[0]
    return bool(owner) and any(
        isinstance(n, ast.Call) and last_name(n.func) not in _READ_ONLY
        and any(dotted(arg) == owner for arg in (*n.args, *(k.value for k in n.keywords))) for n in walk(statement))


def _unset_test(test: ast.expr, name: str) -> bool:
    """``test`` holds only while ``name`` is negative (``name == -1``, ``... and name < 0``)."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    return any(isinstance(part, ast.Compare) and len(part.ops) == 1 and dotted(part.left) == name
               and isinstance(part.ops[0], ast.Eq | ast.Lt) and isinstance(part.comparators[0], ast.UnaryOp)
               and isinstance(part.comparators[0].op, ast.USub) for part in parts)


def assigned(statement: ast.stmt, name: str) -> ast.expr | None:
    """The value ``statement`` gives ``name`` (``x += 1`` and a tuple target: itself, another value), or None."""
    if isinstance(statement, ast.Assign):
        for target in statement.targets:
            if isinstance(target, ast.Name | ast.Attribute) and dotted(target) == name:
                return statement.value
            if isinstance(target, ast.Tuple | ast.List) and any(isinstance(e, ast.Name) and e.id == name
                                                                 for e in target.elts):
                return target
    if isinstance(statement, ast.AugAssign | ast.AnnAssign) and isinstance(statement.target, ast.Name) and (
            statement.target.id == name):
        annotated = isinstance(statement, ast.AnnAssign) and statement.value is not None
        return statement.value if annotated and statement.value is not None else statement.target
    return None


def unpacked_from(name: ast.Name, parents: Mapping[ast.AST, ast.AST]) -> tuple[ast.Call, int] | None:
    """The call whose result ``name`` is last taken from, apart, before it (``local_rank, rank = init_ddp(use_gpu)``:
    the call and ``rank``'s place, 1); None where another statement gave it its value."""
    statement = assignment_before(name.id, name, parents)
    if not (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call)):
        return None
    for target in statement.targets:
        if isinstance(target, ast.Tuple | ast.List) and not any(isinstance(e, ast.Starred) for e in target.elts):
            place = next((i for i, e in enumerate(target.elts) if isinstance(e, ast.Name) and e.id == name.id), None)
            if place is not None:
                return statement.value, place
    return None


def returned_at(function: FunctionNode, place: int) -> list[ast.expr]:
    """What each tuple ``function`` returns holds at ``place`` (``return local_rank, rank``: ``rank`` at 1)."""
    return [r.value.elts[place] for r in walk(function)
            if isinstance(r, ast.Return) and isinstance(r.value, ast.Tuple) and len(r.value.elts) > place]
