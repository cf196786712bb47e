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
from orchestrator.doctor.rules_prints import METRIC, is_log, is_reduced, reduced_names
from orchestrator.source.flow import Site
from orchestrator.source.names import FunctionNode, dotted, last_name

_REDUCING = re.compile(r"reduce|gather|synchroni[sz]e|(^|_)sync($|_)|accumulate_across|mean_across", re.IGNORECASE)
_MAX_DEPTH = 3
_MAX_FLOW = 6  # steps a loader is followed through names, parameters and builders


def check_unreduced_metrics(a: Analysis) -> Iterator[Finding]:
    """DDP013 at a print/log of a metric outside the training loop's body, on rank 0 only (a rank
    condition, or a helper like ``print0``) or on every rank after training (DDP005 owns prints inside
    the training loop on every rank)."""
    if not a.data_parallel:
        return
    _LOOPS.clear()
    _SUMS.clear()
    reduced = reduced_names(a)
    for site in a.flow.sites:
        guarded = a.flow.guarded(site)
        if is_log(site):
            if not guarded and a.in_training_loop(site) is not None:
                continue
        elif not _prints_on_rank_zero(a, site):
            continue
        parts = [*site.call.args, *[k.value for k in site.call.keywords]]
        metrics = [n for part in parts for n in ast.walk(part) if isinstance(n, ast.Name) and METRIC.search(n.id)]
        for name in metrics:
            if is_reduced(a, [name], reduced):
                continue
            loop = _shard_loop(a, name, site.function, site.call.lineno, 0)
            if loop is not None:
                yield a.finding("DDP013", site.call, f"{name.id} comes from the loop at line {loop.lineno} over "
                                                     "the rank's own shard")
                break


def _prints_on_rank_zero(a: Analysis, site: Site) -> bool:
    """``print0(...)``: a function of this file whose prints all sit under a rank condition."""
    target = a.module.local_function(site.call)
    if target is None:
        return False
    logs = [s for s in a.flow.sites_in(target) if is_log(s)]
    return bool(logs) and all(s.branch is not None or a.flow.leaves_one(s) for s in logs)


def _shard_loop(a: Analysis, name: ast.Name, function: FunctionNode | None, before: int,
                depth: int) -> ast.For | None:
    """The non-training loop over a sharded loader that accumulates ``name`` (or what it is computed
    from), in ``function`` or in the local functions whose result it is; None when there is none or
    the evaluating function reduces."""
    if depth > _MAX_DEPTH:
        return None
    scope: ast.AST = function if function is not None else a.module.tree
    for loop in _loops(scope):
        if loop.lineno < before and _accumulates(loop, name.id) and not a.trains(loop) and _loop_sharded(a, loop):
            return None if _reduces(a, scope, (loop.lineno, before)) else loop
    value = _assigned(scope, name.id, before)
    if isinstance(value, ast.Call):
        return _call_shard_loop(a, value, sharded_args=_any_sharded(a, value), depth=depth + 1)
    if value is not None:
        for inner in ast.walk(value):
            if isinstance(inner, ast.Name) and inner.id != name.id:
                found = _shard_loop(a, inner, function, before, depth + 1)
                if found is not None:
                    return found
    return None


def _call_shard_loop(a: Analysis, call: ast.Call, *, sharded_args: bool, depth: int) -> ast.For | None:
    """In the local function ``call`` calls (and those it calls), an accumulating non-training loop
    that reads a sharded loader (its own, or one the caller passed)."""
    target = a.module.local_function(call)
    if target is None or depth > _MAX_DEPTH or _reduces(a, target):
        return None
    for loop in _loops(target):
        if a.trains(loop) or not any(isinstance(n, ast.AugAssign) for n in ast.walk(loop)):
            continue
        if _loop_sharded(a, loop) or (sharded_args and _iterates_parameter(loop, target)):
            return loop
    for inner in a.module.calls_in(target):
        found = _call_shard_loop(a, inner, sharded_args=sharded_args or _any_sharded(a, inner), depth=depth + 1)
        if found is not None:
            return found
    return None


def _iterates_parameter(loop: ast.For, function: FunctionNode) -> bool:
    params = {p.arg for p in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}
    return any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(loop.iter)) or any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
        and n.func.value.id in params for n in ast.walk(loop))


def _any_sharded(a: Analysis, call: ast.Call) -> bool:
    return any(_sharded(a, x, 0) for x in [*call.args, *[k.value for k in call.keywords]]
               if isinstance(x, ast.Name | ast.Attribute))


def _loop_sharded(a: Analysis, loop: ast.For) -> bool:
    """The loop iterates over a sharded loader, or pulls batches from one (``val_loader.next_batch()``)."""
    if _sharded(a, loop.iter, 0):
        return True
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and "batch" in n.func.attr
               and _sharded(a, n.func.value, 0) for n in ast.walk(loop))


_LOOPS: dict[int, tuple[ast.AST, list[ast.For]]] = {}
_SUMS: dict[int, tuple[ast.For, frozenset[str]]] = {}


def _loops(scope: ast.AST) -> list[ast.For]:
    """The for-loops in ``scope`` (cached per scope for the run of this rule)."""
    cached = _LOOPS.get(id(scope))
    if cached is None or cached[0] is not scope:
        cached = (scope, [n for n in ast.walk(scope) if isinstance(n, ast.For)])
        _LOOPS[id(scope)] = cached
    return cached[1]


def _accumulates(loop: ast.For, name: str) -> bool:
    cached = _SUMS.get(id(loop))
    if cached is None or cached[0] is not loop:
        sums = frozenset(k for n in ast.walk(loop) if isinstance(n, ast.AugAssign) and (k := dotted(n.target)))
        cached = (loop, sums)
        _SUMS[id(loop)] = cached
    return name in cached[1]


def _assigned(scope: ast.AST, name: str, before: int) -> ast.expr | None:
    """The last value assigned to ``name`` (also as part of a tuple target) in ``scope`` before a line."""
    found: tuple[int, ast.expr] | None = None
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and node.lineno < before:
            targets = [k for t in node.targets for k in ast.walk(t) if isinstance(k, ast.Name)]
            if any(t.id == name for t in targets) and (found is None or node.lineno > found[0]):
                found = (node.lineno, node.value)
    return found[1] if found else None


def _reduces(a: Analysis, scope: ast.AST, lines: tuple[int, int] | None = None) -> bool:
    """``scope`` (between ``lines``, when given) calls something that reduces or gathers."""
    for call in a.module.calls_in(scope):
        if lines is not None and not lines[0] <= call.lineno <= lines[1]:
            continue
        if _REDUCING.search(last_name(call.func) or ""):
            return True
        q = a.module.qualname(call.func)
        reach = a.project.reach(q) if a.project is not None and q else None
        if reach is not None and any(_REDUCING.search(x.rsplit(".", 1)[-1]) for x in reach.quals):
            return True
    return False


def _sharded(a: Analysis, expr: ast.expr, depth: int) -> bool:
    """``expr`` is (a name bound to) a DataLoader whose sampler is a DistributedSampler."""
    if depth > _MAX_FLOW:
        return False
    if isinstance(expr, ast.Call):
        name = last_name(expr.func) or ""
        built_by = a.module.local_function(expr)
        if built_by is not None:  # loader = make_loader(...): what it returns
            return any(_sharded(a, r.value, depth + 1) for r in ast.walk(built_by)
                       if isinstance(r, ast.Return) and r.value is not None)
        if name == "enumerate" or name == "tqdm":
            return bool(expr.args) and _sharded(a, expr.args[0], depth + 1)
        if "Loader" not in name and "loader" not in name:
            return False
        sampler = next((k.value for k in expr.keywords if k.arg in ("sampler", "batch_sampler")), None)
        if sampler is not None:
            return _is_distributed_sampler(a, sampler, 0)  # its own steps: the loader's flow may be long
        return any(_rank_valued(a, x) for x in [*expr.args, *[k.value for k in expr.keywords]])
    key = dotted(expr)
    if key is None:
        return False
    _, value = a.module.resolve(key, expr)
    values = [value] if value is not None else a.module.values_anywhere(key) if "." in key else []
    if value is None and isinstance(expr, ast.Name):
        values += _returned_for(a, expr)
        function = a.module.function_of(expr)
        if function is not None and not a.module.spawned(function):  # a parameter: what the callers pass
            values += a.module.argument_for(function, expr.id)
    return any(_sharded(a, v, depth + 1) for v in values)


def _rank_valued(a: Analysis, expr: ast.expr) -> bool:
    """``expr`` holds a rank on some path (``ddp_rank = int(os.environ["RANK"]) if ddp else 0``)."""
    if a.ranks.dependent(expr):
        return True
    key = dotted(expr)
    return key is not None and ("rank" in key.lower().rsplit(".", 1)[-1] or any(
        a.ranks.dependent(v) for v in a.module.values_anywhere(key)))


def _returned_for(a: Analysis, name: ast.Name) -> list[ast.expr]:
    """``train_loader, val_loader = prepare()``: what ``prepare`` returns at ``name``'s place."""
    scope = a.module.scope_of(name).node
    for node in ast.walk(scope):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        for target in node.targets:
            if isinstance(target, ast.Tuple) and any(isinstance(e, ast.Name) and e.id == name.id for e in target.elts):
                index = next(i for i, e in enumerate(target.elts) if isinstance(e, ast.Name) and e.id == name.id)
                function = a.module.local_function(node.value)
                if function is None:
                    continue
                return [r.value.elts[index] for r in ast.walk(function) if isinstance(r, ast.Return)
                        and isinstance(r.value, ast.Tuple) and len(r.value.elts) == len(target.elts)]
    return []


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
