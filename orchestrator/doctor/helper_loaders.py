"""DDP013's loaders built by another module of the script's project: ``train_loader, test_loader = get_loader(args)``
where the project's ``get_loader`` gives the test loader a ``DistributedSampler`` (or picks one when the run is
distributed: ``SequentialSampler(ds) if local_rank == -1 else DistributedSampler(ds)``)."""

from __future__ import annotations

import ast

from orchestrator.source.exprnames import FunctionNode, dotted, last_name
from orchestrator.source.names import Module
from orchestrator.source.project import Project
from orchestrator.source.walk import walk

_MAX_FLOW = 4  # steps a loader or a sampler is followed through the helper's names


def distributed_sampler(module: Module, expr: ast.expr, depth: int = 0) -> bool:
    """``expr`` is (a name bound to) a ``DistributedSampler``, or a choice of one (``A(ds) if x else
    DistributedSampler(ds)``: the one a distributed run takes)."""
    if depth > _MAX_FLOW:
        return False
    if isinstance(expr, ast.IfExp):
        return distributed_sampler(module, expr.body, depth + 1) or distributed_sampler(module, expr.orelse, depth + 1)
    if isinstance(expr, ast.Call):
        return (last_name(expr.func) or "").endswith("DistributedSampler")
    key = dotted(expr)
    if key is None:
        return False
    _, value = module.resolve(key, expr)
    return value is not None and distributed_sampler(module, value, depth + 1)


def built_sharded(project: Project, module: Module, call: ast.Call, index: int | None, count: int) -> bool:
    """The project's function ``call`` calls returns, at ``index`` of a ``count``-tuple (the whole value when
    ``index`` is None), a loader with a distributed sampler."""
    qual = module.qualname(call.func)
    where = project.split(qual) if qual else None
    helper = project.read(where[0]) if where is not None else None
    function = helper.functions.get(where[1]) if helper is not None and where is not None else None
    if helper is None or function is None:
        return False
    return any(_loader(helper, value, 0) for value in _returned(function, index, count))


def _returned(function: FunctionNode, index: int | None, count: int) -> list[ast.expr]:
    values = [r.value for r in walk(function) if isinstance(r, ast.Return) and r.value is not None]
    if index is None:
        return values
    return [v.elts[index] for v in values if isinstance(v, ast.Tuple) and len(v.elts) == count]


def _loader(helper: Module, expr: ast.expr, depth: int) -> bool:
    """``expr`` is (a name bound to) ``DataLoader(..., sampler=<a distributed sampler>)``."""
    if depth > _MAX_FLOW:
        return False
    if isinstance(expr, ast.IfExp):
        return _loader(helper, expr.body, depth + 1) or _loader(helper, expr.orelse, depth + 1)
    if isinstance(expr, ast.Call):
        sampler = next((k.value for k in expr.keywords if k.arg in ("sampler", "batch_sampler")), None)
        return "Loader" in (last_name(expr.func) or "") and sampler is not None and distributed_sampler(helper, sampler)
    if not isinstance(expr, ast.Name):
        return False
    _, value = helper.resolve(expr.id, expr)
    return value is not None and _loader(helper, value, depth + 1)
