"""DDP024, a loop left on one rank: a ``return``/``break`` (or a successful exit: ``quit()``, ``sys.exit()``) that
leaves a loop making collectives from inside a rank condition (``if is_master(args): ... if math.isnan(loss): return``;
ECAPA-TDNN's ``if rank == 0: ... destroy_process_group(); quit()`` at the last epoch), or under a flag that only a rank
condition sets (``if rank == 0: ... should_stop = True`` and, outside it, ``if should_stop: break``, the flag never
broadcast): that rank stops while the others meet the loop's next collective (an all_reduce, DDP's gradient all-reduce
in ``loss.backward()``) without it, and the job hangs."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.own_methods import defined_method
from orchestrator.doctor.rules_steps import ddp_in_file
from orchestrator.source.analysis import COLLECTIVES, EXIT_CALLS, REDUCTIONS
from orchestrator.source.assignments import assigned
from orchestrator.source.branches import statements_after
from orchestrator.source.exprnames import dotted, last_name
from orchestrator.source.flow import Site
from orchestrator.source.walk import walk

_GRADIENTS = {"backward": " (DDP's gradient all-reduce)"}
Loop = ast.For | ast.While


def check_rank_exit(a: Analysis) -> Iterator[Finding]:
    """DDP024 at a ``return``/``break`` that leaves a loop making collectives on one rank only."""
    for node in a.module.nodes:
        if not isinstance(node, ast.Return | ast.Break | ast.Expr) or (isinstance(node, ast.Expr)
                                                                       and not _exit_call(a, node)):
            continue
        found = _rank_exit(a, node)
        if found is not None:
            guard, loop, collective, flag = found
            test = ast.unparse(guard.test)[:40]
            called = f"{ast.unparse(collective.func)[:30]}(){_GRADIENTS.get(last_name(collective.func) or '', '')}"
            why = "" if flag is None else (
                f", a flag set only on one rank (`{ast.unparse(flag)[:40]}` at line {flag.lineno} under a rank "
                "condition, never broadcast)")
            word = "return" if isinstance(node, ast.Return) else "break" if isinstance(node, ast.Break) else (
                ast.unparse(node)[:30])
            yield a.finding("DDP024", node, f"{word} under `if {test}` (line {guard.lineno}{why}) "
                            f"{_leaves(node, loop)} at line {loop.lineno}, whose {called} at line {collective.lineno} "
                            "the other ranks still call", severity="warning", confidence="likely")


def _leaves(node: ast.stmt, loop: Loop) -> str:
    return "leaves the loop" if any(n is node for n in walk(loop)) else "leaves the function before the loop"


def _exit_call(a: Analysis, node: ast.AST) -> bool:
    """``quit()``, ``sys.exit()``, ``sys.exit(0)`` as a statement: the process ends there, as a success, so the
    launcher waits for the others (a failing status, ``os._exit(1)``, is a crash that the launcher sees and ends the
    job for: no hang)."""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and a.module.qualname(node.value.func) in EXIT_CALLS):
        return False
    status = node.value.args[0] if node.value.args else None
    return status is None or (isinstance(status, ast.Constant) and status.value in (0, None))


def _rank_exit(a: Analysis, node: ast.stmt) -> tuple[ast.If, Loop, ast.Call, ast.stmt | None] | None:
    """The rank condition around ``node`` (or the ``if`` testing a flag only a rank condition sets, with that
    assignment), the loop it leaves (the innermost for a ``break``, any enclosing one in its function for a
    ``return``) and a collective of that loop's outside the condition."""
    guard: ast.If | None = None
    tests: list[ast.If] = []
    child: ast.AST = node
    parent = a.module.parents.get(node)
    while parent is not None and not isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module):
        if isinstance(parent, ast.If) and guard is None:
            if a.ranks.is_condition(parent.test):
                guard = parent
            else:
                tests.append(parent)
        if isinstance(parent, ast.For | ast.While) and child not in parent.orelse:
            flagged = next(((test, flag) for test in tests if (flag := _rank_flag(a, test.test, parent))), None)
            around, flag = (guard, None) if guard is not None else flagged if flagged is not None else (None, None)
            if around is not None:
                collective = _loop_collective(a, parent, around)
                if collective is not None:
                    return around, parent, collective, flag
            if isinstance(node, ast.Break):
                return None
        child, parent = parent, a.module.parents.get(parent)
    if guard is None or isinstance(node, ast.Break):
        return None
    return _later_loop(a, guard, parent)


def _later_loop(a: Analysis, guard: ast.If, function: ast.AST | None) -> tuple[ast.If, Loop, ast.Call, None] | None:
    """A ``return``/exit under ``guard`` that leaves the function before a later loop of it making collectives
    (ODLab's ``if args.eval_first and is_main_process(): evaluate(...); return`` ahead of the training loop): the other
    ranks go on into the loop and its collectives without that rank. The loop, and its first collective outside the
    guard; None if the function makes none after the guard, or if the guard does not hold on rank 0."""
    if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) or a.ranks.at_rank_zero(guard.test) is not True:
        return None  # only where rank 0 leaves: ``if rank != 0: return`` leaves rank 0's own work to it
    child: ast.AST = guard
    while child is not function:
        parent = a.module.parents.get(child)
        if parent is None:
            return None
        for later in statements_after(parent, child):
            for loop in (n for n in walk(later) if isinstance(n, ast.For | ast.While)):
                collective = _loop_collective(a, loop, guard)
                if collective is not None:
                    return guard, loop, collective, None
        child = parent
    return None


def _rank_flag(a: Analysis, test: ast.expr, loop: Loop) -> ast.stmt | None:
    """An assignment, under a rank condition in ``loop``, of a name or attribute ``test`` reads, where the loop sets
    it nowhere else and hands it to no collective (``should_stop = True`` under ``if rank == 0:``); None if none."""
    keys = {dotted(n) for n in walk(test) if isinstance(n, ast.Name | ast.Attribute)}
    for key in sorted(k for k in keys if k is not None and _own(k)):
        writes = [s for s in walk(loop) if isinstance(s, ast.stmt) and assigned(s, key) is not None]
        if writes and all(_under_rank(a, s, loop) for s in writes) and not _shared(a, loop, key):
            return writes[0]
    return None


def _own(key: str) -> bool:
    """A local name or the object's own attribute (``should_stop``, ``self.stop``); not a shared object's
    (``end_train.value``: a ``multiprocessing.Value`` every process on the node sees)."""
    return "." not in key or (key.startswith("self.") and key.count(".") == 1)


def _under_rank(a: Analysis, statement: ast.stmt, loop: Loop) -> bool:
    parent = a.module.parents.get(statement)
    while parent is not None and parent is not loop:
        if isinstance(parent, ast.If) and a.ranks.is_condition(parent.test):
            return True
        parent = a.module.parents.get(parent)
    return False


def _shared(a: Analysis, loop: Loop, key: str) -> bool:
    """The loop hands ``key`` to a collective (``dist.broadcast_object_list([should_stop], src=0)``)."""
    return any(a.module.qualname(call.func) in (COLLECTIVES | REDUCTIONS) and any(
        isinstance(n, ast.Name | ast.Attribute) and dotted(n) == key
        for arg in (*call.args, *(k.value for k in call.keywords)) for n in walk(arg))
        for call in a.module.calls_in(loop))


def _loop_collective(a: Analysis, loop: ast.For | ast.While, guard: ast.If) -> ast.Call | None:
    inside = {id(n) for n in walk(guard)}
    for site in a.flow.sites:
        if id(site.call) in inside or not any(outer is loop for outer in site.loops):
            continue
        collective = a.reaching(site, COLLECTIVES) or _through_the_project(a, site)
        if collective is not None:
            return collective
    return _loop_backward(a, loop, inside)


def _loop_backward(a: Analysis, loop: ast.For | ast.While, inside: set[int]) -> ast.Call | None:
    """The loop's own ``loss.backward()`` outside the rank condition, or a call of a project class's method whose own
    body makes one (ECAPA-TDNN's ``s.train_network(...)``), where the file trains a DDP model: the gradient all-reduce
    every rank must enter each step (dust2gs's ``break`` on local rank 0 at ``n_iters``)."""
    if not ddp_in_file(a):
        return None
    calls = [call for call in a.module.calls_in(loop) if id(call) not in inside]
    return next((call for call in calls if _backward(call) or (
        (method := defined_method(a, call)) is not None
        and any(_backward(inner) for inner in method.module.calls_in(method.node)))), None)


def _backward(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr == "backward"


def _through_the_project(a: Analysis, site: Site) -> ast.Call | None:
    """In a helper module, ``site`` when it calls another module of the script's project that makes a collective
    (JoeyNMT's training loop calling ``helpers_for_ddp.ddp_reduce``, an ``all_reduce``): a helper's own reading does
    not follow its calls into the project, the script's project does."""
    project = a.outer.project if a.outer is not None else None
    reach = project.reach(site.qual) if project is not None and site.qual else None
    return site.call if reach is not None and not reach.quals.isdisjoint(COLLECTIVES) else None
