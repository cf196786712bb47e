"""Comparisons of a rank with constants: which ranks pass them."""

from __future__ import annotations

import ast

import pytest

from orchestrator.source.rankcompare import dead_side, evaluate_at_zero, fold, uniform


def _compare(text: str) -> ast.Compare:
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Compare)
    return node


def test_rank_zero_passes_a_test_of_minus_one_or_zero_and_not_a_test_of_one() -> None:
    test = _compare("local_rank in (-1, 0)")
    assert evaluate_at_zero(test.ops[0], test.comparators[0]) is True
    test = _compare("rank == 1")
    assert evaluate_at_zero(test.ops[0], test.comparators[0]) is False
    test = _compare("rank == other")
    assert evaluate_at_zero(test.ops[0], test.comparators[0]) is None
    assert isinstance(fold(ast.parse("-1", mode="eval").body), ast.Constant)


def test_launched_distributed_tests_hold_on_every_rank_alike() -> None:
    assert uniform(_compare("local_rank != -1")) and uniform(_compare("rank >= 0"))
    assert uniform(_compare("local_rank is not None"))
    assert not uniform(_compare("rank == 0")) and not uniform(_compare("rank > 0"))


@pytest.mark.parametrize(("test", "side"), [
    ("local_rank != -1", "orelse"), ("local_rank > -1", "orelse"), ("rank >= 0", "orelse"),
    ("-1 < local_rank", "orelse"),
    ("local_rank == -1", "body"), ("rank < 0", "body"),
    ("rank == 0", None), ("local_rank is None", None), ("args.gpu is not None", None),
])
def test_the_side_no_launched_rank_takes(test: str, side: str | None) -> None:
    assert dead_side(_compare(test)) == side
