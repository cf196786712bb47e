"""What a spawn starts: torch.multiprocessing's spawners (:data:`SPAWNERS`), the function one of them (or a
``Process(target=...)``) runs in each process it starts (:func:`spawn_target`), and the functions a file hands to a
spawner: directly (``mp.spawn(worker, ...)``), or through a parameter of the function that spawns, filled by a call of
this file (``def main(main_worker, args): mp.spawn(main_worker, ...)`` called ``main(main_worker, args)``). Their
first parameter is the process index, whatever it is called (``device``, ``proc_id``); a function merely passed around
(a callback, a ``launch(job_fn=main)`` of a project module) is not known to be one."""

from __future__ import annotations

import ast

from orchestrator.source.exprnames import FunctionNode, last_name
from orchestrator.source.names import Module
from orchestrator.source.walk import walk

# torch.multiprocessing's spawners (their first argument, or ``fn=``, runs in every process they start)
SPAWNERS = frozenset({"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes", "multiprocessing.spawn"})
SPAWNER_NAMES = frozenset(q.rsplit(".", 1)[1] for q in SPAWNERS)  # "spawn", "start_processes"
_MULTIPROCESSING = ("torch.multiprocessing.", "multiprocessing.")


def is_spawner(qualified: str | None) -> bool:
    """``qualified`` names a spawner wherever it is imported from (``torch.multiprocessing.spawn.start_processes``)."""
    return qualified is not None and qualified.startswith(_MULTIPROCESSING) \
        and qualified.rsplit(".", 1)[1] in SPAWNER_NAMES


def spawn_target(call: ast.Call) -> ast.expr | None:
    """The function a process-starting call runs in each process it starts: a ``Process(target=...)``'s target, a
    spawner's (:data:`SPAWNERS`, ``start_processes``) first argument or ``fn=``."""
    if last_name(call.func) == "Process":
        return next((k.value for k in call.keywords if k.arg == "target"), None)
    return call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "fn"), None)


def started_by_spawner(module: Module, function: FunctionNode) -> bool:
    """``function`` is what a spawn of this file starts."""
    for call in walk(module.tree):
        if not (isinstance(call, ast.Call) and is_spawner(module.qualname(call.func))):
            continue
        target = spawn_target(call)
        if not isinstance(target, ast.Name):
            continue
        if target.id == function.name:
            return True
        spawner = module.function_of(target)
        if spawner is not None and any(isinstance(v, ast.Name) and v.id == function.name
                                       for v in module.argument_for(spawner, target.id)):
            return True
    return False
