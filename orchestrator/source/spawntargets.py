"""The functions a file hands to ``torch.multiprocessing.spawn`` / ``start_processes``: directly
(``mp.spawn(worker, ...)``), or through a parameter of the function that spawns, filled by a call of this file
(``def main(main_worker, args): mp.spawn(main_worker, ...)`` called ``main(main_worker, args)``). Their first
parameter is the process index, whatever it is called (``device``, ``proc_id``); a function merely passed around (a
callback, a ``launch(job_fn=main)`` of a project module) is not known to be one."""

from __future__ import annotations

import ast

from orchestrator.source.names import FunctionNode, Module
from orchestrator.source.walk import walk

_SPAWNERS = ("multiprocessing.spawn", "multiprocessing.start_processes")


def started_by_spawner(module: Module, function: FunctionNode) -> bool:
    """``function`` is what a spawn of this file starts."""
    for call in walk(module.tree):
        if not (isinstance(call, ast.Call) and (module.qualname(call.func) or "").endswith(_SPAWNERS)):
            continue
        target = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "fn"), None)
        if not isinstance(target, ast.Name):
            continue
        if target.id == function.name:
            return True
        spawner = module.function_of(target)
        if spawner is not None and any(isinstance(v, ast.Name) and v.id == function.name
                                       for v in module.argument_for(spawner, target.id)):
            return True
    return False
