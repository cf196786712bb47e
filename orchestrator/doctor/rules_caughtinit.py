"""DDP019: a failed ``init_process_group`` caught and let go (``try: dist.init_process_group(...) except Exception:
print(...)``), so a rank whose rendezvous failed trains alone as a world of one. Silent when every handler raises or
exits, when the init is retried, when the ``try`` also holds the training (the work ends with it), or when the handler
returns from the function that trains after it."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.source.analysis import EXIT_CALLS, INIT, INIT_FAILURES
from orchestrator.source.branches import catches
from orchestrator.source.exprnames import last_name
from orchestrator.source.flow import Site
from orchestrator.source.walk import walk


def check_swallowed_init(a: Analysis) -> Iterator[Finding]:
    """DDP019: ``try: dist.init_process_group(...) except Exception: print(...)`` and the script goes on: a rank
    whose rendezvous failed trains alone as a world of one. Silent when every handler raises or exits."""
    for node in a.module.nodes:
        if not isinstance(node, ast.Try):
            continue
        body = {id(call) for stmt in node.body for call in a.module.calls_in(stmt)}
        init = next((s for s in a.flow.sites if id(s.call) in body and _starts_group(a, s)), None)
        if init is None:
            continue
        for handler in (h for h in node.handlers if catches(h, INIT_FAILURES)):
            if not (_stops(a, handler) or _retried(a, node, handler) or _work_skipped(a, node, init)
                    or _whole_run(a, init) or _returns_before_work(a, node, handler)):
                caught = ast.unparse(handler.type) if handler.type is not None else "everything"
                yield a.finding("DDP019", init.call, f"{ast.unparse(init.call.func)[:40]}() fails into `except "
                                f"{caught[:40]}` (line {handler.lineno}), which goes on")
                break


_REPORTS = frozenset({"print", "debug", "info", "warning", "warn", "error", "exception", "log"})


def _work_skipped(a: Analysis, node: ast.Try, init: Site) -> bool:
    """A process's target whose ``try`` holds the work after the init and ends the function (``def worker(i, q):
    try: init(); train() except Exception: q.put(traceback.format_exc())``): a failed rendezvous skips the training
    too and the process ends, so no rank trains on alone."""
    function = a.module.function_of(node)
    if function is None or function.body[-1] is not node or not _process_target(a, function.name):
        return False
    raised = {id(n) for stmt in node.body for r in walk(stmt) if isinstance(r, ast.Raise) for n in walk(r)}
    return any(isinstance(call, ast.Call) and id(call) not in raised and last_name(call.func) not in _REPORTS
               for stmt in node.body if stmt.lineno > init.call.lineno for call in walk(stmt))


def _returns_before_work(a: Analysis, node: ast.Try, handler: ast.ExceptHandler) -> bool:
    """The handler returns from a function that trains after the ``try`` (tunet's ``try: setup_ddp() except
    Exception as e: logging.error(...); return`` at the top of ``train(config)``): a failed rendezvous skips that
    training, so no rank trains alone."""
    function = a.module.function_of(node)
    if function is None or not any(isinstance(n, ast.Return) for stmt in handler.body for n in walk(stmt)):
        return False
    later = [s for s in function.body if s.lineno > (node.end_lineno or node.lineno)]
    return any(a.trains(stmt) for stmt in later)


def _whole_run(a: Analysis, init: Site) -> bool:
    """The group is started inside a call that also trains (``try: run(cfg) except Exception: log(...)``, a catch
    around the whole run): a failed rendezvous ends that call, the training with it, so no rank trains alone."""
    return init.qual not in INIT and a.trains(init.call)


def _process_target(a: Analysis, name: str) -> bool:
    """``name`` is what a process runs: ``Process(target=name)``, ``mp.spawn(name, ...)``, ``start_processes(name,
    ...)``, in this file or in the script that calls it."""
    for reading in (a, a.outer):
        for call in (n for n in (reading.module.nodes if reading is not None else ()) if isinstance(n, ast.Call)):
            callee = last_name(call.func)
            target = next((k.value for k in call.keywords if k.arg == "target"), None) if callee == "Process" else (
                call.args[0] if callee in ("spawn", "start_processes") and call.args else None)
            if target is not None and last_name(target) == name:
                return True
    return False


def _starts_group(a: Analysis, site: Site) -> bool:
    if a.reaching(site, INIT) is not None:
        return True
    project = a.outer.project if a.outer is not None else None  # a helper's call into another helper
    reach = project.reach(site.qual) if project is not None else None
    return reach is not None and not reach.quals.isdisjoint(INIT)


def _retried(a: Analysis, node: ast.Try, handler: ast.ExceptHandler) -> bool:
    """The init is tried again: the ``try`` sits in a loop and its handler goes on to the next try (``continue``), or
    the function checks ``dist.is_initialized()`` after it (a setup that retries on another port)."""
    loop = a.module.parents.get(node)
    while loop is not None and not isinstance(loop, ast.For | ast.While | ast.FunctionDef | ast.AsyncFunctionDef):
        loop = a.module.parents.get(loop)
    if not isinstance(loop, ast.For | ast.While):
        return False
    scope: ast.AST = a.module.function_of(node) or a.module.tree
    return any(isinstance(n, ast.Continue) for stmt in handler.body for n in walk(stmt)) or any(
        isinstance(n, ast.Call) and (a.module.qualname(n.func) or "").endswith("is_initialized")
        and n.lineno > node.lineno for n in walk(scope))


def _stops(a: Analysis, handler: ast.ExceptHandler) -> bool:
    return any(isinstance(n, ast.Raise) or (isinstance(n, ast.Call) and a.module.qualname(n.func) in EXIT_CALLS)
               for stmt in handler.body for n in walk(stmt))

