"""A call's keyword, written in the call or spread from a dict the module binds (orchestrator/source/kwargs.py)."""

from __future__ import annotations

import ast

import pytest

from orchestrator.source.kwargs import keyword, subscript_key
from orchestrator.source.names import Module


def _value(source: str) -> str | None:
    tree = ast.parse(source)
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "f")
    found = keyword(call, "shuffle", tree)
    return None if found is None else ast.unparse(found)


@pytest.mark.parametrize(("source", "value"), [
    ("f(x, shuffle=False)", "False"),
    ("kw = {'shuffle': False}\nf(x, **kw)", "False"),
    ("kw = dict(shuffle=True, drop_last=False)\nf(x, **kw)", "True"),
    ("kw = {'drop_last': False}\nf(x, **kw)", None),  # not given: the default
    ("kw = {'shuffle': False}\nkw = {'shuffle': True}\nf(x, **kw)", None),  # bound twice, two values: unknown
    ("kw = {'shuffle': False}\nkw = {'shuffle': False}\nf(x, **kw)", "False"),
    ("kw = make()\nf(x, **kw)", None),
    ("f(x, **kwargs)", None),
    ("kw = {'shuffle': False}\nf(x, shuffle=True, **kw)", "True"),  # the call's own keyword first
])
def test_keyword(source: str, value: str | None) -> None:
    assert _value(source) == value


@pytest.mark.parametrize(("expr", "key"), [
    ('cfg["world_size"]', "cfg['world_size']"),
    ("self.config['world_size']", "self.config['world_size']"),
    ("cfg[0]", None),  # not a string key
    ('get()["world_size"]', None),  # not a dotted name
])
def test_subscript_key(expr: str, key: str | None) -> None:
    assert subscript_key(ast.parse(expr, mode="eval").body) == key


def test_a_string_keys_assignment_is_recorded_under_its_subscript_key() -> None:
    module = Module(ast.parse('config = {}\nconfig["world_size"] = get_world_size()\n'))
    assert [ast.unparse(v) for v in module.values_anywhere("config['world_size']")] == ["get_world_size()"]
