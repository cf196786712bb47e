"""The switch a file starts its process group under (pure): ``if ddp:`` around every ``init_process_group`` of the
file, or around every call of the file's own function that starts it (ABACBS's ``if ddp: setup(rank, local_rank,
world_size)``). Every rank of a distributed run took that switch, so the other side of a test of the same switch
(``if ddp: ... else: torch.save(...)`` in the checkpoint helper) runs on no rank of it (``Flow.dead_side``).

A switch is a function's parameter, never rebound in the function (``ddp`` of ``train(..., ddp=True)``), or a
dotted flag the file never assigns (``args.ddp``). It is followed through calls of the file's own functions: into a
function every call of which passes a switch for the parameter, or leaves it out where its default is true
(``save_checkpoint(..., ddp=ddp)``); out of a function called from one place (``train(..., args.ddp)``). A function
passed around (``mp.spawn(train, ...)``) has callers out of sight and is not followed. A test that only partly
holds the switch (``if ddp and rank == 0:``) guards its body with it, never its ``else``.
"""

from __future__ import annotations

import ast

from orchestrator.source.exprnames import (
    FunctionNode,
    dotted,
    last_name,
    parameter_defaults,
    parameter_names,
    positional_parameters,
)
from orchestrator.source.names import Module

Switch = tuple[FunctionNode | None, str]  # (the function whose parameter it is, or None for a flag; its name)
_DEPTH = 4


def init_switches(module: Module) -> frozenset[Switch]:
    """The switches every ``init_process_group`` of ``module`` runs under (empty where one runs without any)."""
    inits = [n for n in module.nodes if isinstance(n, ast.Call) and last_name(n.func) == "init_process_group"]
    if not inits:
        return frozenset()
    found: set[Switch] | None = None
    for call in inits:
        guards = _guards(module, call, 0)
        found = guards if found is None else found & guards
    switches = found or set()
    changed = bool(switches)
    while changed:
        before = len(switches)
        switches |= _passed_in(module, switches) | _passed_out(module, switches)
        changed = len(switches) > before
    return frozenset(switches)


def switch_of(module: Module, expr: ast.expr) -> Switch | None:
    """What ``expr`` names as a switch key: a parameter of its function never rebound there, or a dotted flag the
    file never assigns; None for anything else."""
    if isinstance(expr, ast.Name):
        function = module.function_of(expr)
        if function is None or expr.id not in parameter_names(function):
            return None
        own = module.scope_of(expr).assigned.get(expr.id, [])
        return (function, expr.id) if all(value is None for _, value in own) and len(own) <= 1 else None
    key = dotted(expr) if isinstance(expr, ast.Attribute) else None
    return (None, key) if key is not None and not module.values_anywhere(key) else None


def _guards(module: Module, node: ast.AST, depth: int) -> set[Switch]:
    """The switches ``node`` runs under: the ``if`` tests around it in its function whose true side holds it, and
    where there are none, those every call of its function stands under."""
    found: set[Switch] = set()
    child, current = node, module.parents.get(node)
    while current is not None and not isinstance(current, FunctionNode | ast.ClassDef | ast.Module):
        if isinstance(current, ast.If) and any(child is s for s in current.body):
            test = current.test
            parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
            found |= {s for part in parts if (s := switch_of(module, part)) is not None}
        child, current = current, module.parents.get(current)
    if found or depth >= _DEPTH or not isinstance(current, FunctionNode) or module.spawned(current):
        return found
    calls = module.calls_of(current)
    shared: set[Switch] | None = None
    for call in calls:
        guards = _guards(module, call, depth + 1)
        shared = guards if shared is None else shared & guards
    return shared or set()


def _passed_in(module: Module, switches: set[Switch]) -> set[Switch]:
    """Parameters every call of their function gives a switch (at least one call by passing it, the others
    leaving it to a default that is true)."""
    found: set[Switch] = set()
    for function in (n for n in module.nodes if isinstance(n, FunctionNode)):
        calls = module.calls_of(function)
        if not calls or module.spawned(function):
            continue
        for name in parameter_names(function):
            if (function, name) in switches:
                continue
            bound = [_bound(function, call, name) for call in calls]
            passed = [value for value in bound if isinstance(value, ast.expr)]
            if passed and all(switch_of(module, v) in switches for v in passed) and all(
                    value is not None for value in bound):
                found.add((function, name))
    return found


def _passed_out(module: Module, switches: set[Switch]) -> set[Switch]:
    """What the one call of a function passes for a parameter that is a switch: true wherever the function runs."""
    found: set[Switch] = set()
    for function, name in switches:
        if function is None or module.spawned(function):
            continue
        calls = module.calls_of(function)
        value = _bound(function, calls[0], name) if len(calls) == 1 else None
        switch = switch_of(module, value) if isinstance(value, ast.expr) else None
        if switch is not None:
            found.add(switch)
    return found


def _bound(function: FunctionNode, call: ast.Call, name: str) -> ast.expr | bool | None:
    """What ``call`` binds ``function``'s parameter ``name`` to: the argument, True where it is left to a default
    that is true, None where it cannot be told (a ``*``/``**`` spread, a false default)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    keyword = next((k.value for k in call.keywords if k.arg == name), None)
    if keyword is not None:
        return keyword
    params = positional_parameters(function, call)
    if name in params and params.index(name) < len(call.args):
        return call.args[params.index(name)]
    default = parameter_defaults(function).get(name)
    return True if isinstance(default, ast.Constant) and default.value is True else None

