"""A call's keyword argument, also where it comes in a ``**name`` spread of a dict the module writes (pure).

``DistributedSampler(ds, **sampler_args)`` with ``sampler_args = {"shuffle": False, "drop_last": False}`` a few lines
above (GLaMM's three training samplers) passes ``shuffle=False`` as surely as writing it in the call. A name bound
to a dict literal (``{"shuffle": False}``) or a ``dict(shuffle=False)`` call is read; where the module binds the name
more than once, only a key every binding gives the same value counts."""

from __future__ import annotations

import ast

from orchestrator.source.walk import walk


def subscript_key(expr: ast.expr) -> str | None:
    """``cfg['world_size']`` for a constant string key of a dotted name (``cfg["world_size"] = n`` is recorded
    under it, as ``args.x = n`` is under ``args.x``); else None."""
    if not (isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant)
            and isinstance(expr.slice.value, str)):
        return None
    base = expr.value
    parts: list[str] = []
    while isinstance(base, ast.Attribute):
        parts.append(base.attr)
        base = base.value
    return f"{'.'.join([base.id, *reversed(parts)])}[{expr.slice.value!r}]" if isinstance(base, ast.Name) else None


def keyword(call: ast.Call, name: str, tree: ast.AST | None = None) -> ast.expr | None:
    """The value ``call`` gives keyword ``name``: written in the call, else from a ``**spread`` that ``tree``
    (the module) binds to one dict; None where neither says."""
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if tree is None:
        return None
    for k in call.keywords:
        if k.arg is None and isinstance(k.value, ast.Name):
            value = _spread_value(tree, k.value.id, name)
            if value is not None:
                return value
    return None


def argument(call: ast.Call, name: str, index: int) -> ast.expr | None:
    """The value ``call`` gives its parameter ``name``, by keyword or at position ``index``."""
    return next((k.value for k in call.keywords if k.arg == name), call.args[index] if len(call.args) > index else None)


def _spread_value(tree: ast.AST, variable: str, key: str) -> ast.expr | None:
    bound = [node.value for node in walk(tree) if isinstance(node, ast.Assign)
             and any(isinstance(t, ast.Name) and t.id == variable for t in node.targets)]
    values = [dict_entry(value, key) for value in bound]
    if not values or any(v is None for v in values):
        return None
    first = values[0]
    assert first is not None
    return first if all(ast.dump(v) == ast.dump(first) for v in values if v is not None) else None


def dict_entry(value: ast.expr, key: str) -> ast.expr | None:
    """``value``'s entry for ``key``: a dict display's, or a ``dict(key=...)`` call's."""
    if isinstance(value, ast.Dict):
        return next((v for k, v in zip(value.keys, value.values, strict=True)
                     if isinstance(k, ast.Constant) and k.value == key), None)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
        return next((k.value for k in value.keywords if k.arg == key), None)
    return None
