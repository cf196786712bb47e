"""Values a print shows that are not a rank's unreduced metric (DDP005): a count, or a full-set result."""

from __future__ import annotations

import ast

from orchestrator.doctor.analysis import Analysis
from orchestrator.source.exprnames import last_name
from orchestrator.source.walk import walk


def is_counter(a: Analysis, name: ast.Name) -> bool:
    """``not_loss_dec_cnt``: every assignment an integer constant (``= 0``, ``+= 1``): a count, not a metric."""
    values: list[ast.expr] = []
    for node in walk(a.module.function_of(name) or a.module.tree):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name.id:
            values.append(node.value)
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            value = node.value
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
                pairs = list(zip(target.elts, value.elts, strict=True))
            else:
                pairs = [(target, value)]
            values += [v for t, v in pairs if isinstance(t, ast.Name) and t.id == name.id]
    parts = [p for v in values for p in ((v.body, v.orelse) if isinstance(v, ast.IfExp) else (v,))]
    return bool(parts) and all(isinstance(p, ast.Constant) and type(p.value) is int for p in parts)


def full_set_value(a: Analysis, name: ast.Name) -> bool:
    """A metric returned by a function of this file that reads its data with a SequentialSampler (CodeT5's
    ``eval_ppl = eval_ppl_epoch(...)``): the whole set on every rank, the same value everywhere."""
    _, value = a.module.resolve(name.id, name)
    function = a.module.local_function(value) if isinstance(value, ast.Call) else None
    if function is None:
        return False
    samplers = [last_name(n.func) or "" for n in walk(function) if isinstance(n, ast.Call)]
    return "SequentialSampler" in samplers and not any("Distributed" in s for s in samplers)


_FRAMEWORK_SHARDS = frozenset({"prepare", "prepare_data_loader", "setup_dataloaders"})


def framework_prepared(a: Analysis) -> frozenset[str]:
    """The names handed to a framework's sharding call (``accelerator.prepare(model, opt, train_dl)``,
    ``prepare_data_loader``, ``fabric.setup_dataloaders``): a loader among them is split across the ranks."""
    return frozenset(n.id for call in walk(a.module.tree) if isinstance(call, ast.Call)
                     and last_name(call.func) in _FRAMEWORK_SHARDS
                     for arg in [*call.args, *(k.value for k in call.keywords)] for n in walk(arg)
                     if isinstance(n, ast.Name))


def in_framework_call(a: Analysis, node: ast.AST) -> bool:
    """``node`` is built inside a framework's sharding call (``accelerator.prepare(DataLoader(...))``)."""
    current = a.module.parents.get(node)
    while current is not None and not isinstance(current, ast.stmt):
        if isinstance(current, ast.Call) and last_name(current.func) in _FRAMEWORK_SHARDS:
            return True
        current = a.module.parents.get(current)
    return False


def unprepared_sum(a: Analysis, name: ast.Name) -> bool:
    """A sum over a loader the framework never shards (``loss_test += ...`` in ``for batch in val_loader:``,
    where only the training loader went through ``accelerator.prepare``/``fabric.setup_dataloaders``): under
    Accelerate or Fabric the loader reads the whole set on every rank, so every rank shows the same value."""
    if not a.framework_parallel or a.data_parallel:
        return False
    scope: ast.AST = a.module.function_of(name) or a.module.tree
    prepared = framework_prepared(a)
    for loop in walk(scope):
        if not (isinstance(loop, ast.For) and loop.lineno < name.lineno) or a.trains(loop):
            continue
        sums = {t.id for t in walk(loop) if isinstance(t, ast.AugAssign) and isinstance(t.target, ast.Name)
                for t in [t.target]}
        loader = _iterated(loop.iter)
        if name.id in sums and loader is not None and loader not in prepared:
            return True
    return False


def _iterated(expr: ast.expr) -> str | None:
    """``val_loader`` in ``for b in val_loader``, ``enumerate(val_loader)`` or ``tqdm(val_loader)``."""
    while isinstance(expr, ast.Call) and expr.args and last_name(expr.func) in ("enumerate", "tqdm", "iter"):
        expr = expr.args[0]
    return expr.id if isinstance(expr, ast.Name) else None


def listed_sum(a: Analysis, name: ast.Name) -> bool:
    """A sum over a list the file fills with the same items on every rank (NeRF's ``test_views = []``, then
    ``test_views.append(testset[i])`` for ``i in (1, 4)``; ``test_loss += ...`` in ``for img, tf in test_views``):
    no rank reads a share of its own, so every rank shows the same value."""
    scope: ast.AST = a.module.function_of(name) or a.module.tree
    for loop in walk(scope):
        if not (isinstance(loop, ast.For) and loop.lineno < name.lineno) or a.trains(loop):
            continue
        listed = _iterated(loop.iter)
        if listed is None or name.id not in {t.target.id for t in walk(loop) if isinstance(t, ast.AugAssign)
                                             and isinstance(t.target, ast.Name)}:
            continue
        _, value = a.module.resolve(listed, loop)
        items: list[ast.expr] = [value] if isinstance(value, ast.List | ast.Tuple) else []
        items += [c for c in walk(scope) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                  and c.func.attr in ("append", "extend") and isinstance(c.func.value, ast.Name)
                  and c.func.value.id == listed]
        if isinstance(value, ast.List | ast.Tuple) and not any(
                a.ranks.dependent(i) or not _fixed_loops(a, i, scope) for i in items):
            return True
    return False


def _fixed_loops(a: Analysis, node: ast.AST, scope: ast.AST) -> bool:
    """Every loop around ``node`` (inside ``scope``) walks fixed items: a literal tuple or list, or a ``range`` of
    no rank (not a loader, which may hand each rank its own share)."""
    current = a.module.parents.get(node)
    while current is not None and current is not scope:
        if isinstance(current, ast.While | ast.AsyncFor):
            return False
        fixed = isinstance(current, ast.For) and (isinstance(current.iter, ast.Tuple | ast.List) or (
            isinstance(current.iter, ast.Call) and last_name(current.iter.func) == "range"))
        if isinstance(current, ast.For) and (not fixed or a.ranks.dependent(current.iter)):
            return False
        current = a.module.parents.get(current)
    return True
