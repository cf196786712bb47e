"""A flag raised on rank 0: ``default_gpu = False``, then ``if rank == 0: default_gpu = True`` (and ``else:
default_gpu = True`` for the run no launcher started); or a parameter lowered off it: ``def train(rank, config,
verbose=1): if rank != 0: verbose = 0`` (3D-EMGP). Testing it later is testing the rank."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from orchestrator.source.branches import enclosing_ifs
from orchestrator.source.exprnames import dotted
from orchestrator.source.walk import walk

if TYPE_CHECKING:
    from orchestrator.source.ranks import Ranks


def flag_of_rank_zero(ranks: Ranks, test: ast.Name | ast.Attribute, depth: int) -> bool:
    """``test`` is a flag only rank 0 holds: raised on rank 0 (:func:`raised_on_rank_zero`) or a parameter lowered on
    the other ranks (:func:`lowered_off_rank_zero`)."""
    return raised_on_rank_zero(ranks, test, depth) or lowered_off_rank_zero(ranks, test, depth)


def lowered_off_rank_zero(ranks: Ranks, test: ast.Name | ast.Attribute, depth: int) -> bool:
    """``test`` names a parameter of its function that the function sets only to ``0``/``False``/``None``, each time on
    the other ranks' side of a rank test (``if rank != 0: verbose = 0``): true, if at all, on rank 0 alone."""
    if not isinstance(test, ast.Name):
        return False
    function = ranks.module.function_of(test)
    if function is None or test.id not in {a.arg for a in (*function.args.posonlyargs, *function.args.args,
                                                           *function.args.kwonlyargs)}:
        return False
    statements = [s for s in ranks.module.assignments(test.id) if ranks.module.function_of(s) is function]
    return bool(statements) and all(isinstance(s.value, ast.Constant) and not s.value.value
                                    and _side(ranks, s, depth, zero=False) == "rank" for s in statements)


def raised_on_rank_zero(ranks: Ranks, test: ast.Name | ast.Attribute, depth: int) -> bool:
    """Every value ``test`` is given is ``True`` or ``False``, and each ``True`` is given on rank 0's side of a rank
    test (or on the side of a rank-dependent test that no launched rank takes: ``if dist.is_available() and
    args.local_rank != -1: ... else: flag = True``), at least one under a rank test: a flag only rank 0 holds."""
    module = ranks.module
    key = dotted(test)
    statements = module.assignments(key) if key is not None else []
    if isinstance(test, ast.Name):  # a local name: its own function's assignments
        statements = [s for s in statements if module.function_of(s) is module.function_of(test)]
    if not statements or not all(isinstance(s.value, ast.Constant) and isinstance(s.value.value, bool)
                                 for s in statements):
        return False
    raised = [s for s in statements if isinstance(s.value, ast.Constant) and s.value.value is True]
    sides = [_side(ranks, s, depth) for s in raised]
    return bool(raised) and None not in sides and "rank" in sides


def _side(ranks: Ranks, statement: ast.Assign, depth: int, zero: bool = True) -> str | None:
    """``rank``: on rank 0's side of a rank test (``zero``; else on the other ranks' side); ``unlaunched``: in the
    ``else`` of a test that reads a rank but holds alike on every rank (``local_rank != -1``); None: anywhere else."""
    for current, in_body in enclosing_ifs(ranks.module.parents, statement):
        if ranks.is_condition(current.test, depth + 1):
            at_zero = ranks.at_rank_zero(current.test, depth + 1)
            return "rank" if at_zero is not None and (at_zero == in_body) == zero else None
        reads_rank = any(ranks.dependent(part, depth + 1) for part in walk(current.test)
                         if isinstance(part, ast.Name | ast.Attribute))
        return "unlaunched" if reads_rank and not in_body else None
    return None
