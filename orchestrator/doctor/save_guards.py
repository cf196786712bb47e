"""DDP006: saves that only some ranks reach though no rank condition sits around them.

- A value the other ranks unset: ``if rank != 0: self.ckpt_dir = None`` early on, then ``if self.ckpt_dir is not
  None: save(...)``. Only rank 0 keeps the value the save is conditioned on, so only rank 0 saves.
- A parameter left at its ``None`` default: ``def checkpoint(cfg, model=None): if model is not None: torch.save(...)
  else: return torch.load(...)``. A call that passes no model (a resume, run on every rank) loads and never reaches
  the save; only the calls that pass one (under the script's rank condition) save.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from orchestrator.source.analysis import Analysis as Reading
from orchestrator.source.exprnames import FunctionNode, dotted
from orchestrator.source.names import Module


def unset_elsewhere(a: Reading, node: ast.AST) -> bool:
    """An ``if`` around ``node`` (in its function) tests a value (``X is not None``, ``X``, one part of an ``and``)
    that the file sets to None (or False) on the ranks other than 0 only."""
    for test in _enclosing_tests(a.module, node):
        for part in _and_parts(test):
            key = _tested_value(part)
            if key is not None and _unset_off_main(a, key):
                return True
    return False


def left_at_none(function: FunctionNode, node: ast.AST, call: ast.Call, module: Module) -> bool:
    """``node`` sits under ``if P is not None:`` (or ``if P:``) in ``function``, ``P`` a parameter whose default is
    None, and ``call`` (a call of ``function``) passes nothing for ``P``: that call does not reach ``node``."""
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords):
        return False  # f(*args, **kwargs): what it passes cannot be told
    defaults = _none_defaults(function, call)
    for test in _enclosing_tests(module, node):
        for part in _and_parts(test):
            name = _tested_value(part)
            if name in defaults and not any(k.arg == name for k in call.keywords):
                return True
    return False


def _none_defaults(function: FunctionNode, call: ast.Call) -> set[str]:
    """The parameters of ``function`` whose default is None and that ``call`` passes no positional argument for."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    offset = 1 if isinstance(call.func, ast.Attribute) and positional[:1] and positional[0].arg in ("self", "cls") \
        else 0
    given = len(call.args) + offset
    out: set[str] = set()
    for index, (param, default) in enumerate(zip(positional[len(positional) - len(args.defaults):], args.defaults,
                                                 strict=True), start=len(positional) - len(args.defaults)):
        if _is_none(default) and index >= given:
            out.add(param.arg)
    out |= {p.arg for p, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None and _is_none(d)}
    return out


def _is_none(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


def _enclosing_tests(module: Module, node: ast.AST) -> Iterator[ast.expr]:
    """The tests of the ``if`` statements whose body holds ``node``, in its function (innermost first)."""
    child, current = node, module.parents.get(node)
    while current is not None and not isinstance(current, FunctionNode | ast.ClassDef | ast.Module):
        if isinstance(current, ast.If) and child in current.body:
            yield current.test
        child, current = current, module.parents.get(current)


def _and_parts(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [part for value in test.values for part in _and_parts(value)]
    return [test]


def _tested_value(part: ast.expr) -> str | None:
    """``X`` of ``X is not None`` or of a bare ``X`` (a name or attribute)."""
    if (isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.ops[0], ast.IsNot)
            and _is_none(part.comparators[0])):
        part = part.left
    return dotted(part) if isinstance(part, ast.Name | ast.Attribute) else None


def _unset_off_main(a: Reading, key: str) -> bool:
    """``key`` holds a value on rank 0 alone: the file assigns it None (or False) on the side of a rank condition
    rank 0 does not take (``if rank not in [0, -1]: self.ckpt_dir = None``), or sets it to None and gives it a value
    only on the side rank 0 takes (``saver = None``, then ``if is_primary(args): saver = CheckpointSaver(...)``)."""
    assigned = a.module.assignments(key)
    unset = [node for node in assigned if isinstance(node.value, ast.Constant) and node.value.value in (None, False)]
    if any(_rank_side(a, node, direct=True) is False for node in unset):
        return True
    set_ = [node for node in assigned if node not in unset]
    return bool(unset and set_) and all(_rank_side(a, node, direct=False) is True for node in set_)


def _rank_side(a: Reading, node: ast.AST, direct: bool) -> bool | None:
    """Whether rank 0 takes the side of the rank condition ``node`` sits in (the ``if`` right around it when
    ``direct``, else the innermost one in its function); None when no rank condition holds it."""
    child, current = node, a.module.parents.get(node)
    while current is not None and not isinstance(current, FunctionNode | ast.ClassDef | ast.Module):
        if isinstance(current, ast.If) and a.ranks.is_condition(current.test):
            at_zero = a.ranks.at_rank_zero(current.test)
            if at_zero is None:
                return None
            return at_zero if child in current.body else not at_zero
        if direct:
            return None
        child, current = current, a.module.parents.get(current)
    return None
