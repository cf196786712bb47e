"""An expression's name read from the expression alone: the dotted chain and its last part."""

from __future__ import annotations

import ast

import pytest

from orchestrator.source.exprnames import (
    FunctionNode,
    dotted,
    last_name,
    parameter_defaults,
    parameter_names,
    positional_parameters,
)


def _expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


@pytest.mark.parametrize(("text", "expected"), [
    ("torch.distributed.barrier", "torch.distributed.barrier"), ("model", "model"),
    ("self.trainer.strategy", "self.trainer.strategy"),
    ("model().module", None), ("models[0].module", None), ("'a'.join", None)])
def test_a_chain_of_names_is_dotted_and_anything_else_is_not(text: str, expected: str | None) -> None:
    assert dotted(_expr(text)) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("dist.barrier", "barrier"), ("barrier", "barrier"), ("model().module", "module"), ("f()", None),
    ("xs[0]", None)])
def test_the_last_name_is_an_attributes_or_a_names_own(text: str, expected: str | None) -> None:
    assert last_name(_expr(text)) == expected


def test_function_nodes_are_plain_and_async_definitions() -> None:
    tree = ast.parse("def f(): pass\nasync def g(): pass\nclass C: pass\nh = lambda: 0\n")
    kinds = [isinstance(node, FunctionNode) for node in tree.body]
    assert kinds == [True, True, False, False]


def test_parameter_defaults_pairs_the_last_positional_parameters_and_the_keyword_only_ones() -> None:
    function = ast.parse("def f(a, /, b, c=1, *args, d, e=None, **kw): pass").body[0]
    assert isinstance(function, ast.FunctionDef)
    assert {name: ast.unparse(value) for name, value in parameter_defaults(function).items()} == {"c": "1", "e": "None"}


def test_parameter_names_are_the_named_ones_in_order_without_the_spreads() -> None:
    function = ast.parse("def f(a, /, b, c=1, *args, d, e=None, **kw): pass").body[0]
    assert isinstance(function, ast.FunctionDef)
    assert parameter_names(function) == ["a", "b", "c", "d", "e"]


@pytest.mark.parametrize(("definition", "call", "expected"), [
    ("def f(a, /, b, c=1, *args, d): pass", "f(1, 2)", ["a", "b", "c"]),
    ("def save(self, model, path): pass", "saver.save(m, p)", ["model", "path"]),  # a method's self is bound
    ("def save(self, model, path): pass", "save(s, m, p)", ["self", "model", "path"]),  # called as a function
    ("def wrap(model, rank): pass", "utils.wrap(m, r)", ["model", "rank"]),  # a module's function, no self
])
def test_positional_parameters_are_what_the_calls_positional_arguments_bind(definition: str, call: str,
                                                                             expected: list[str]) -> None:
    function = ast.parse(definition).body[0]
    called = _expr(call)
    assert isinstance(function, ast.FunctionDef) and isinstance(called, ast.Call)
    assert positional_parameters(function, called) == expected
