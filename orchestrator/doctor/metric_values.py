"""Values a print shows that are not a rank's unreduced metric (DDP005): a count, or a full-set result."""

from __future__ import annotations

import ast

from orchestrator.doctor.analysis import Analysis
from orchestrator.source.names import last_name


def is_counter(a: Analysis, name: ast.Name) -> bool:
    """``not_loss_dec_cnt``: every assignment an integer constant (``= 0``, ``+= 1``): a count, not a metric."""
    values: list[ast.expr] = []
    for node in ast.walk(a.module.function_of(name) or a.module.tree):
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
    samplers = [last_name(n.func) or "" for n in ast.walk(function) if isinstance(n, ast.Call)]
    return "SequentialSampler" in samplers and not any("Distributed" in s for s in samplers)
