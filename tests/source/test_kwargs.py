"""A call's keyword, written in the call or spread from a dict the module binds (orchestrator/source/kwargs.py)."""

from __future__ import annotations

import ast

import pytest

from orchestrator.source.kwargs import keyword


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
