"""DDP013: a validation/test metric summed over the rank's own shard (a loader with a DistributedSampler)
and printed or logged under a rank-0 guard with no all_reduce / all_gather / reduce of it: the number
shown is rank 0's shard only (1/world of the data), not the model's.

What counts as a reduction: a torch.distributed reduction of the value (or of a name it is computed
from), or any call in the evaluating function whose name says it reduces or gathers (``all_reduce``,
``reduce_tensor``, ``gather``, ``synchronize_between_processes``, ``sync``), the script's or a helper's.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.names import FunctionNode, dotted, last_name
from orchestrator.doctor.rules_output import METRIC, is_log, is_reduced, reduced_names

_REDUCING = re.compile(r"reduce|gather|synchroni[sz]e|(^|_)sync($|_)|accumulate_across|mean_across", re.IGNORECASE)
_MAX_DEPTH = 3


def check_unreduced_metrics(a: Analysis) -> Iterator[Finding]:
    if not a.data_parallel:
        return
    reduced = reduced_names(a)
    for site in a.flow.sites:
        if not is_log(site) or not a.flow.guarded(site):
            continue
        parts = [*site.call.args, *[k.value for k in site.call.keywords]]
        metrics = [n for part in parts for n in ast.walk(part) if isinstance(n, ast.Name) and METRIC.search(n.id)]
        for name in metrics:
            if is_reduced(a, [name], reduced):
                continue
            loop = _shard_loop(a, name, site.function, site.call.lineno, 0)
            if loop is not None:
                yield a.finding("DDP013", site.call, f"{name.id} comes from the loop over {ast.unparse(loop.iter)[:40]}"
                                                     f" at line {loop.lineno}, one shard per rank")
                break


def _shard_loop(a: Analysis, name: ast.Name, function: FunctionNode | None, before: int,
                depth: int) -> ast.For | None:
    """The non-training loop over a sharded loader that accumulates ``name`` (or what it is computed
    from), in ``function`` or in the local function whose result it is; None when there is none or
    the evaluating function reduces."""
    if depth > _MAX_DEPTH:
        return None
    scope: ast.AST = function if function is not None else a.module.tree
    if _reduces(a, scope):
        return None
    for loop in _loops(scope):
        if loop.lineno < before and _accumulates(loop, name.id) and not a.trains(loop) and _sharded(
                a, loop.iter, 0):
            return loop
    value = _assigned(scope, name.id, before)
    if isinstance(value, ast.Call):
        target = a.module.local_function(value)
        if target is not None and not _reduces(a, target):
            for loop in _loops(target):
                if not a.trains(loop) and _returned_from(target, loop) and _sharded_in_call(a, loop, target, value):
                    return loop
    elif value is not None:
        for inner in ast.walk(value):
            if isinstance(inner, ast.Name) and inner.id != name.id:
                found = _shard_loop(a, inner, function, before, depth + 1)
                if found is not None:
                    return found
    return None


def _loops(scope: ast.AST) -> list[ast.For]:
    return [n for n in ast.walk(scope) if isinstance(n, ast.For)]


def _accumulates(loop: ast.For, name: str) -> bool:
    return any(isinstance(n, ast.AugAssign) and dotted(n.target) == name for n in ast.walk(loop))


def _returned_from(function: FunctionNode, loop: ast.For) -> bool:
    """The loop accumulates something the function returns (directly or computed from it)."""
    sums = {dotted(n.target) for n in ast.walk(loop) if isinstance(n, ast.AugAssign)}
    returned = {n.id for r in ast.walk(function) if isinstance(r, ast.Return) and r.value is not None
                for n in ast.walk(r.value) if isinstance(n, ast.Name)}
    for node in ast.walk(function):  # acc = correct / total; return acc
        if isinstance(node, ast.Assign) and any(dotted(t) in returned for t in node.targets):
            returned |= {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
    return bool(sums & returned)


def _assigned(scope: ast.AST, name: str, before: int) -> ast.expr | None:
    """The last value assigned to ``name`` (also as part of a tuple target) in ``scope`` before a line."""
    found: tuple[int, ast.expr] | None = None
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and node.lineno < before:
            targets = [k for t in node.targets for k in ast.walk(t) if isinstance(k, ast.Name)]
            if any(t.id == name for t in targets) and (found is None or node.lineno > found[0]):
                found = (node.lineno, node.value)
    return found[1] if found else None


def _reduces(a: Analysis, scope: ast.AST) -> bool:
    for call in a.module.calls_in(scope):
        if _REDUCING.search(last_name(call.func) or ""):
            return True
        q = a.module.qualname(call.func)
        reach = a.project.reach(q) if a.project is not None and q else None
        if reach is not None and any(_REDUCING.search(x.rsplit(".", 1)[-1]) for x in reach.quals):
            return True
    return False


def _sharded(a: Analysis, expr: ast.expr, depth: int) -> bool:
    """``expr`` is (a name bound to) a DataLoader whose sampler is a DistributedSampler."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, ast.Call):
        name = last_name(expr.func) or ""
        if name == "enumerate" or name == "tqdm":
            return bool(expr.args) and _sharded(a, expr.args[0], depth + 1)
        if not name.endswith("DataLoader"):
            return False
        sampler = next((k.value for k in expr.keywords if k.arg in ("sampler", "batch_sampler")), None)
        return sampler is not None and _is_distributed_sampler(a, sampler, depth + 1)
    key = dotted(expr)
    if key is None:
        return False
    _, value = a.module.resolve(key, expr)
    values = [value] if value is not None else a.module.values_anywhere(key) if "." in key else []
    return any(_sharded(a, v, depth + 1) for v in values)


def _is_distributed_sampler(a: Analysis, expr: ast.expr, depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, ast.Call):
        return (last_name(expr.func) or "").endswith("DistributedSampler")
    key = dotted(expr)
    if key is None:
        return False
    _, value = a.module.resolve(key, expr)
    return value is not None and _is_distributed_sampler(a, value, depth + 1)


def _sharded_in_call(a: Analysis, loop: ast.For, function: FunctionNode, call: ast.Call) -> bool:
    """The loop in ``function`` iterates over a parameter that ``call`` fills with a sharded loader (or
    over a loader of its own that is sharded)."""
    if _sharded(a, loop.iter, 0):
        return True
    names = {n.id for n in ast.walk(loop.iter) if isinstance(n, ast.Name)}
    params = [p.arg for p in (*function.args.posonlyargs, *function.args.args)]
    for index, param in enumerate(params):
        if param not in names:
            continue
        passed = call.args[index] if index < len(call.args) else next(
            (k.value for k in call.keywords if k.arg == param), None)
        if passed is not None and _sharded(a, passed, 0):
            return True
    return False
