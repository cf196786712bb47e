"""What an expression spells as a name, read from the expression alone: ``a.b.c`` for an attribute chain, its last
part, and the node types that are functions. The names of a whole module (aliases, scopes, assignments) are
``source/names.py``'s."""

from __future__ import annotations

import ast

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def dotted(expr: ast.expr) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return ".".join(reversed(parts))


def last_name(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Attribute):
        return expr.attr
    if isinstance(expr, ast.Name):
        return expr.id
    return None


def parameter_names(function: FunctionNode) -> list[str]:
    """``function``'s named parameters, in order: positional, then keyword-only (not ``*args``/``**kwargs``)."""
    spec = function.args
    return [p.arg for p in (*spec.posonlyargs, *spec.args, *spec.kwonlyargs)]


def parameter_defaults(function: FunctionNode) -> dict[str, ast.expr]:
    """``function``'s parameters that have a default, with it (positional and keyword-only)."""
    spec = function.args
    positional = [*spec.posonlyargs, *spec.args]
    out = {p.arg: d for p, d in zip(positional[len(positional) - len(spec.defaults):], spec.defaults, strict=True)}
    out.update({p.arg: d for p, d in zip(spec.kwonlyargs, spec.kw_defaults, strict=True) if d is not None})
    return out


def positional_parameters(function: FunctionNode, call: ast.Call) -> list[str]:
    """The names ``call``'s positional arguments bind in ``function``, in order: its positional parameters, ``self``
    left out where the call is a method's (``obj.f(...)``)."""
    params = [p.arg for p in (*function.args.posonlyargs, *function.args.args)]
    return params[1:] if isinstance(call.func, ast.Attribute) and params[:1] == ["self"] else params
