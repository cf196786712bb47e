"""Whether a loader is the rank's own shard, for DDP013: a DataLoader whose sampler is a DistributedSampler (or whose
arguments hold a rank), one the frameworks hand back sharded (``fabric.setup_dataloaders``, ``accelerator.prepare``, a
HF Trainer's ``get_eval_dataloader``), or one the project's own loader builder (another module) gives a distributed
sampler; followed through names, tuple unpacking, the file's builders and the arguments a function's callers pass.
"""

from __future__ import annotations

import ast
import re

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.helper_loaders import built_sharded, distributed_sampler
from orchestrator.doctor.own_methods import entered
from orchestrator.source.exprnames import dotted, last_name
from orchestrator.source.walk import walk

_MAX_FLOW = 6  # steps a loader is followed through names, parameters and builders
# calls that return a sharded loader: the frameworks' (Fabric, Accelerate) and a HF Trainer's loader getters
SHARDING = re.compile(r"^(setup_dataloaders|prepare_data_loader|get_(train|eval|test)_dataloader)$")
_PREPARE = "accelerate.Accelerator.prepare"


def sharded(a: Analysis, expr: ast.expr, depth: int = 0) -> bool:
    """``expr`` is (a name bound to) a DataLoader whose sampler is a DistributedSampler."""
    if depth > _MAX_FLOW:
        return False
    if isinstance(expr, ast.Call):
        name = last_name(expr.func) or ""
        built_by = a.module.local_function(expr)
        if built_by is not None:  # loader = make_loader(...): what it returns
            return any(sharded(a, r.value, depth + 1) for r in walk(built_by)
                       if isinstance(r, ast.Return) and r.value is not None)
        if name == "enumerate" or name == "tqdm":
            return bool(expr.args) and sharded(a, expr.args[0], depth + 1)
        if _shards(a, expr) or (a.project is not None and built_sharded(a.project, a.module, expr, None, 0)):
            return True
        if "Loader" not in name and "loader" not in name:
            return False
        sampler = next((k.value for k in expr.keywords if k.arg in ("sampler", "batch_sampler")), None)
        if sampler is not None:
            return distributed_sampler(a.module, sampler)  # its own steps: the loader's flow may be long
        return any(_rank_valued(a, x) for x in [*expr.args, *[k.value for k in expr.keywords]])
    if isinstance(expr, ast.Dict | ast.List | ast.Tuple):  # a container of loaders, iterated
        return any(sharded(a, e, depth + 1) for e in (expr.values if isinstance(expr, ast.Dict) else expr.elts)
                   if e is not None)
    key = dotted(expr)
    if key is None:
        return False
    _, value = a.module.resolve(key, expr)
    values = [value] if value is not None else a.module.values_anywhere(key) if "." in key else []
    if isinstance(value, ast.Dict | ast.List) and isinstance(expr, ast.Name):
        values += _stored(a, expr)
    if value is None and isinstance(expr, ast.Name):
        values += _iterated(a, expr)
        if _project_built(a, expr):
            return True
        values += _returned_for(a, expr) + entered(a, expr)
        function = a.module.function_of(expr)
        if function is not None and not a.module.spawned(function):  # a parameter: what the callers pass
            values += a.module.argument_for(function, expr.id)
    return any(sharded(a, v, depth + 1) for v in values)


def _shards(a: Analysis, call: ast.Call) -> bool:
    """``fabric.setup_dataloaders(...)``, ``accelerator.prepare(...)``, ``trainer.get_eval_dataloader(...)``."""
    return SHARDING.match(last_name(call.func) or "") is not None or a.module.qualname(call.func) == _PREPARE


def _rank_valued(a: Analysis, expr: ast.expr) -> bool:
    """``expr`` holds a rank on some path (``ddp_rank = int(os.environ["RANK"]) if ddp else 0``)."""
    if a.ranks.dependent(expr):
        return True
    key = dotted(expr)
    return key is not None and ("rank" in key.lower().rsplit(".", 1)[-1] or any(
        a.ranks.dependent(v) for v in a.module.values_anywhere(key)))


def _returned_for(a: Analysis, name: ast.Name) -> list[ast.expr]:
    """``train_loader, val_loader = prepare()``: what ``prepare`` returns at ``name``'s place; the framework's
    call itself for ``train_dl, val_dl = fabric.setup_dataloaders(train_dl, val_dl)``."""
    scope = a.module.scope_of(name).node
    found: list[ast.expr] = []
    for node in walk(scope):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        for target in node.targets:
            if isinstance(target, ast.Tuple) and any(isinstance(e, ast.Name) and e.id == name.id for e in target.elts):
                index = next(i for i, e in enumerate(target.elts) if isinstance(e, ast.Name) and e.id == name.id)
                function = a.module.local_function(node.value)
                if function is None:
                    if _shards(a, node.value):
                        found.append(node.value)
                    continue
                found += [r.value.elts[index] for r in walk(function) if isinstance(r, ast.Return)
                          and isinstance(r.value, ast.Tuple) and len(r.value.elts) == len(target.elts)]
    return found


def _project_built(a: Analysis, name: ast.Name) -> bool:
    """``train_loader, test_loader = get_loader(args)``: the project's ``get_loader`` (another module) gives the
    loader at ``name``'s place a distributed sampler."""
    if a.project is None:
        return False
    for node in walk(a.module.scope_of(name).node):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and a.module.local_function(node.value) is None):
            continue
        for target in node.targets:
            at = [i for i, e in enumerate(getattr(target, "elts", [])) if isinstance(e, ast.Name) and e.id == name.id]
            if at and built_sharded(a.project, a.module, node.value, at[0], len(target.elts)):  # type: ignore[attr-defined]
                return True
    return False


def _iterated(a: Analysis, name: ast.Name) -> list[ast.expr]:
    """The container a loop of ``name``'s function takes ``name`` from, where it holds loaders, not batches:
    ``for val_name, val_loader in val_loaders.items()`` (florence2's loaders by data set), ``.values()``, or a list
    or dict written in (``for loader in [val_loader, test_loader]``, or a name bound to one)."""
    scope: ast.AST = a.module.function_of(name) or a.module.tree
    found: list[ast.expr] = []
    for loop in walk(scope):
        if not isinstance(loop, ast.For):
            continue
        iterated, target = loop.iter, loop.target
        method = iterated.func.attr if isinstance(iterated, ast.Call) and isinstance(
            iterated.func, ast.Attribute) and not iterated.args else None
        if method == "items" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            target = target.elts[1]
        if not (isinstance(target, ast.Name) and target.id == name.id):
            continue
        if method in ("items", "values") and isinstance(iterated, ast.Call) and isinstance(
                iterated.func, ast.Attribute):
            found.append(iterated.func.value)
        elif isinstance(iterated, ast.List | ast.Tuple | ast.Dict) or (isinstance(iterated, ast.Name) and isinstance(
                a.module.resolve(iterated.id, iterated)[1], ast.List | ast.Tuple | ast.Dict)):
            found.append(iterated)
    return found


def _stored(a: Analysis, name: ast.Name) -> list[ast.expr]:
    """What ``name``'s function puts into the dict or list ``name`` holds: ``loaders[key] = loader``,
    ``loaders.append(loader)``."""
    scope: ast.AST = a.module.function_of(name) or a.module.tree
    found: list[ast.expr] = []
    for node in walk(scope):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                                                and t.value.id == name.id for t in node.targets):
            found.append(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append" and (
                isinstance(node.func.value, ast.Name) and node.func.value.id == name.id and len(node.args) == 1):
            found.append(node.args[0])
    return found
