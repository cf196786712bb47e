"""What an evaluation loop adds up, for DDP013: the names a loop accumulates into, whether a reduction after it
covers them, and a print of the loop's last batch where its total was reduced.

A loop accumulates into a name by ``total += v`` (``sums[k] += v`` into ``sums``), ``values.append(v)`` /
``.extend(v)``, ``meter.update(v)`` (an averager: ``AverageMeter``), ``metrics.accumulate(v)`` or ``values[k] = v``.
A reduction covers a name when the names it is handed (followed back through their assignments) reach it; a reduction
handed nothing (``meters.sync()``) covers every name, as the reader cannot tell what it reduces.
"""

from __future__ import annotations

import ast
from collections.abc import Collection

from orchestrator.source.exprnames import dotted
from orchestrator.source.walk import walk

_COLLECTS = frozenset({"append", "extend", "update", "accumulate"})
_FOLLOW = 3  # assignments a reduction's argument is followed back through


def accumulations(loop: ast.For) -> dict[str, list[ast.expr]]:
    """The names ``loop`` accumulates into, each with the values it adds (``{"total": [loss.item()]}``)."""
    found: dict[str, list[ast.expr]] = {}
    for node in walk(loop):
        if isinstance(node, ast.AugAssign) and (key := _summed_into(node.target)):
            found.setdefault(key, []).append(node.value)  # ``total += v``, ``sums[k] += v``
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _COLLECTS
              and isinstance(node.func.value, ast.Name) and (node.args or node.keywords)):
            found.setdefault(node.func.value.id, []).extend([*node.args, *(k.value for k in node.keywords)])
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
            target = node.targets[0].value
            if isinstance(target, ast.Name):
                found.setdefault(target.id, []).append(node.value)
    return found


def collected(loop: ast.For, name: str) -> bool:
    """``name`` is only added to by a method (``meter.update(v)``, ``values.append(v)``), never summed with ``+=``."""
    return not any(isinstance(n, ast.AugAssign) and _summed_into(n.target) == name for n in walk(loop))


def _summed_into(target: ast.expr) -> str | None:
    """The name a ``+=`` adds to: ``total``, ``self.total``, or the dict or list of ``sums[k]``."""
    return dotted(target.value) if isinstance(target, ast.Subscript) else dotted(target)


def names_in(exprs: list[ast.expr]) -> set[str]:
    return {n.id for e in exprs for n in walk(e) if isinstance(n, ast.Name)}


def assigned_before(scope: ast.AST, name: str, before: int) -> ast.expr | None:
    """The last value assigned to ``name`` (also as part of a tuple target) in ``scope`` before a line."""
    found = assignment_before(scope, name, before)
    return found.value if found is not None else None


def assignment_before(scope: ast.AST, name: str, before: int) -> ast.Assign | None:
    """The last assignment to ``name`` (also as part of a tuple target) in ``scope`` before a line."""
    found: ast.Assign | None = None
    for node in walk(scope):
        if isinstance(node, ast.Assign) and node.lineno < before:
            targets = [k for t in node.targets for k in walk(t) if isinstance(k, ast.Name)
                       and isinstance(k.ctx, ast.Store)]  # not ``results[key] = v``
            if any(t.id == name for t in targets) and (found is None or node.lineno > found.lineno):
                found = node
    return found


def refs(exprs: list[ast.expr], modules: Collection[str]) -> set[str]:
    """The values ``exprs`` read, as dotted names, a method's name left out (``outputs.loss.detach().float()``:
    ``outputs.loss``) and modules too (``torch.tensor(correct)``: ``correct``)."""
    found: set[str] = set()
    stack: list[ast.AST] = list(exprs)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name | ast.Attribute) and (key := dotted(node)) is not None:
            if key.split(".")[0] not in modules:
                found.add(key)
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute):
                stack.append(node.func.value)  # a method's receiver (a module's function: the module, left out)
            stack += [*node.args, *(k.value for k in node.keywords)]
        else:
            stack += list(ast.iter_child_nodes(node))
    return found


def covers(call: ast.Call, scope: ast.AST, names: set[str], modules: Collection[str]) -> bool:
    """The reducing ``call`` reduces one of ``names`` (dotted, as ``refs`` gives them): its result is one of them,
    it is handed one of them (or what holds it: ``outputs`` for ``outputs.loss``), or a value computed from one
    (``stats = torch.tensor([correct, total]); dist.all_reduce(stats)``), or nothing the reader can follow."""
    if _assigned_to(call, scope) & names:  # ``reduced = reduce_tensor(loss).item(); total += reduced``
        return True
    handed = [*call.args, *(k.value for k in call.keywords)]
    if not handed:
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        return not isinstance(receiver, ast.Name) or receiver.id in names or not _holds_values(scope, receiver.id)
    reach = refs(handed, modules)
    frontier = set(reach)
    for _ in range(_FOLLOW):
        values = [v for n in frontier if "." not in n and (v := assigned_before(scope, n, call.lineno)) is not None]
        values += [v for n in frontier if "." not in n for v in iterated(scope, n, call)]
        frontier = refs(values, modules) - reach
        reach |= frontier
    return any(r == n or r.startswith(n + ".") or n.startswith(r + ".") for r in reach for n in names)


def derived(loop: ast.For, names: set[str], modules: Collection[str]) -> set[str]:
    """``names`` and what they are computed from in ``loop`` (``hits = preds == refs; correct += hits.sum()``,
    ``total += hits.shape[0]``: ``preds`` and ``refs`` too), followed back through the loop's own assignments:
    a gathered value stays gathered through them."""
    end = (loop.end_lineno or loop.lineno) + 1
    reach, frontier = set(names), set(names)
    for _ in range(_FOLLOW):
        roots = {n.split(".")[0] for n in frontier}  # ``hits.shape[0]``: what ``hits`` is computed from
        values = [v for n in roots if (v := assigned_before(loop, n, end)) is not None]
        frontier = refs(values, modules) - reach
        reach |= frontier
    return reach


def _assigned_to(call: ast.Call, scope: ast.AST) -> set[str]:
    """The names the statement holding ``call`` assigns its result to."""
    for node in walk(scope):
        if isinstance(node, ast.Assign) and any(n is call for n in walk(node.value)):
            return {t.id for target in node.targets for t in walk(target) if isinstance(t, ast.Name)}
    return set()


def _holds_values(scope: ast.AST, name: str) -> bool:
    """``name`` is assigned in ``scope`` (a value of the script's, not a module or a framework object passed in)."""
    return any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
               for n in walk(scope))


def loop_holding(loops: list[ast.For], assignment: ast.Assign, before: int) -> ast.For | None:
    """The innermost of ``loops`` that holds ``assignment`` and ends before line ``before`` (a value shown after the
    loop is then its last pass's: ``for batch in val_loader: val_loss = ...``, then ``print(val_loss)``)."""
    holding = [loop for loop in loops if loop.lineno < assignment.lineno <= (loop.end_lineno or 0) < before]
    return max(holding, key=lambda loop: loop.lineno, default=None)


def iterated(scope: ast.AST, name: str, node: ast.AST) -> list[ast.expr]:
    """The values a ``for name in [a, b]:`` loop of ``scope`` around ``node`` binds ``name`` to, one by one
    (``for tensor in [loss, accuracy]: dist.all_reduce(tensor)`` reduces ``loss`` and ``accuracy``)."""
    line = getattr(node, "lineno", 0)
    return [value for loop in walk(scope) if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name)
            and loop.target.id == name and isinstance(loop.iter, ast.List | ast.Tuple)
            and loop.lineno <= line <= (loop.end_lineno or loop.lineno) for value in loop.iter.elts]
