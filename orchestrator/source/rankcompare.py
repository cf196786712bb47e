"""Comparisons of a rank with constants: which ranks pass ``rank >= 2``, ``rank in (-1, 0)``, ``local_rank != -1``
(the arithmetic ``orchestrator.source.ranks`` asks of a rank condition)."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable

FLIPPED: dict[type[ast.cmpop], ast.cmpop] = {ast.Lt: ast.Gt(), ast.Gt: ast.Lt(), ast.LtE: ast.GtE(),
                                              ast.GtE: ast.LtE()}
OPERATORS: dict[type[ast.cmpop], Callable[[int, int], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge}


def fold(expr: ast.expr) -> ast.expr:
    """``-1`` parses as a unary minus on 1: fold it (and inside lists) into constants."""
    if (isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub) and isinstance(expr.operand, ast.Constant)
            and isinstance(expr.operand.value, int | float) and not isinstance(expr.operand.value, bool)):
        return ast.copy_location(ast.Constant(-expr.operand.value), expr)
    if isinstance(expr, ast.List | ast.Tuple | ast.Set):
        return ast.copy_location(type(expr)(elts=[fold(e) for e in expr.elts]), expr)
    return expr


def evaluate_at_zero(op: ast.cmpop, right: ast.expr) -> bool | None:
    """``0 <op> right`` (or ``"0" <op> right`` for strings), for constant ``right``."""
    right = fold(right)
    if isinstance(right, ast.List | ast.Tuple | ast.Set):
        if not all(isinstance(e, ast.Constant) for e in right.elts):
            return None
        values = [e.value for e in right.elts if isinstance(e, ast.Constant)]
        if isinstance(op, ast.In | ast.NotIn):
            inside = 0 in values or "0" in values
            return inside if isinstance(op, ast.In) else not inside
        return None
    if not isinstance(right, ast.Constant) or isinstance(right.value, bool):
        return None
    c = right.value
    if isinstance(c, str) and isinstance(op, ast.Eq | ast.NotEq):
        return (c == "0") == isinstance(op, ast.Eq)
    if not isinstance(c, int):
        return None
    compare = OPERATORS.get(type(op))
    return bool(compare(0, c)) if compare is not None else None


def uniform(test: ast.Compare) -> bool:
    """Comparisons that hold on every rank or on none: ``rank != -1`` ("launched distributed"),
    ``rank >= 0``, ``local_rank is not None``."""
    if len(test.ops) != 1:
        return False
    left, op, right = fold(test.left), test.ops[0], fold(test.comparators[0])
    if isinstance(left, ast.Constant) and not isinstance(right, ast.Constant):
        left, right = right, left
        op = FLIPPED.get(type(op), op)
    if not isinstance(right, ast.Constant):
        return False
    if right.value is None:
        return True
    if not isinstance(right.value, int) or isinstance(right.value, bool):
        return False
    c = right.value
    return ((isinstance(op, ast.Eq | ast.NotEq) and c < 0) or (isinstance(op, ast.Gt) and c < 0)
            or (isinstance(op, ast.GtE) and c <= 0) or (isinstance(op, ast.Lt) and c <= 0)
            or (isinstance(op, ast.LtE) and c < 0))


def dead_side(test: ast.Compare) -> str | None:
    """The side of an ``if`` on a uniform comparison of a rank with a number (``uniform``) that no launched rank
    takes: ``"orelse"`` for a test every rank passes (``local_rank != -1``, ``rank >= 0``: the else is the
    single-process path), ``"body"`` for one none passes (``local_rank == -1``); None for any other test. A test of
    None is not one: ``args.gpu is None`` holds on every rank a launcher starts without the flag."""
    if not uniform(test):
        return None
    left, op, right = fold(test.left), test.ops[0], fold(test.comparators[0])
    if isinstance(left, ast.Constant) and not isinstance(right, ast.Constant):
        op = FLIPPED.get(type(op), op)
        right = left
    if not isinstance(right, ast.Constant) or right.value is None:
        return None
    every = isinstance(op, ast.NotEq | ast.Gt | ast.GtE)  # uniform: these hold on every rank, the others on none
    return "orelse" if every else "body"


def literal(expr: ast.expr) -> bool:
    """A literal, negative ones too (``self.rank = -1``: the fallback of a run with no launcher)."""
    return isinstance(fold(expr), ast.Constant)
