"""A helper module's device from the script's global rank, handed over in an object or a parameter (DDP010 in a helper).

``average.cuda(args.rank)`` in a project module whose function takes ``args`` as a parameter: the module alone cannot
tell what ``args.rank`` holds; the script that imports it can, where it sets ``args.rank`` to the global rank
(``args.rank = int(os.environ["SLURM_PROCID"])``; the CASS-NAT recipe's task and optimizer helpers). The attribute is
matched by name (the script's ``X.rank`` for the helper's ``P.rank``, ``P`` a parameter of the helper's function)."""

from __future__ import annotations

import ast

from orchestrator.source.analysis import Analysis as Reading


def script_global_attribute(a: Reading, expr: ast.expr) -> bool:
    """``expr`` is ``P.attr`` with ``P`` a parameter of its function in a helper module, and the script that imports
    the helper sets an attribute of that name to the global rank."""
    outer = a.outer
    if outer is None or not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)):
        return False
    function = a.module.function_of(expr)
    if function is None or expr.value.id not in {p.arg for p in (*function.args.args, *function.args.kwonlyargs)}:
        return False
    for node in outer.module.nodes:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = zip(target.elts, node.value.elts, strict=True) if isinstance(target, ast.Tuple) and isinstance(
                node.value, ast.Tuple) and len(target.elts) == len(node.value.elts) else [(target, node.value)]
            for part, value in pairs:
                if isinstance(part, ast.Attribute) and part.attr == expr.attr and \
                        outer.ranks.device_from_global_rank(value):
                    return True
    return False


def script_global_parameter(a: Reading, expr: ast.expr) -> bool:
    """``expr`` is a parameter of its function in a helper module (``model.to(rank)`` in ``wrap(model, rank,
    world_size)``), bound nowhere else in it, and every value the script's calls pass for it (one at least) is the
    global rank (``wrap(model, rank, world_size)`` with ``rank = int(os.environ["RANK"])``: wafer's DDP wrapper)."""
    outer = a.outer
    if outer is None or not isinstance(expr, ast.Name):
        return False
    function = a.module.function_of(expr)
    spec = function.args if function is not None else None
    if function is None or spec is None or expr.id not in {p.arg for p in (*spec.posonlyargs, *spec.args,
                                                                           *spec.kwonlyargs)}:
        return False
    if len(a.module.scope_of(expr).assigned.get(expr.id, ())) != 1:
        return False  # bound again in the function
    passed = outer.passes_for(function, expr.id)
    return bool(passed) and all(outer.ranks.device_from_global_rank(value) for value in passed)
