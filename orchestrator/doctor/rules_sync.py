"""DDP002 (a collective only some ranks reach) and DDP007 (destroy_process_group misplaced)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.sharded_models import gathering_what, sharded_collective
from orchestrator.source.analysis import COLLECTIVES, DESTROY, INIT, WRAPPERS
from orchestrator.source.branches import enclosing_ifs, other_side
from orchestrator.source.exprnames import dotted, last_name
from orchestrator.source.flow import Branch, Site
from orchestrator.source.names import LIGHTNING_TRAINER
from orchestrator.source.walk import walk

# Collectives in some versions of their framework only: a warning, likely (Lightning 2's Trainer.save_checkpoint
# ends in the strategy's barrier; older ones did not wait).
_VERSIONED = frozenset({f"{LIGHTNING_TRAINER}.save_checkpoint"})


def _short(node: ast.AST, limit: int = 50) -> str:
    text = ast.unparse(node).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_collectives(a: Analysis) -> Iterator[Finding]:
    """DDP002: a collective inside ``if <rank condition>`` (or a call that reaches one) when the other
    side of that ``if`` does not make the same call, or after ``if <rank condition>: return`` with no
    new process group in between. The same collective under rank conditions of both polarities in one
    function is taken as a deliberate pair (the "rank 0 first" pattern: the other ranks wait at one
    barrier, rank 0 at the other; IndexTTS's rank-0 broadcast of a cached index, whose receiving side is the other
    ranks' branch of a later ``if rank == 0: ... else: dist.broadcast(...)``). Not a subgroup's collective
    (``group=`` a ``new_group(ranks=...)``): its members alone call it."""
    candidates: list[tuple[Site, ast.Call, str, bool | None]] = []
    sharded: set[int] = set()  # the calls that gather an FSDP model's shards
    sides: dict[tuple[int, str | None], set[bool | None]] = {}
    for site in a.flow.sites:
        if site.branch is None and site.early_guard is None:
            continue
        collective = a.reaching(site, COLLECTIVES)
        if collective is None and (collective := sharded_collective(a, site)) is not None:
            sharded.add(id(collective))
        if collective is None or _subgroups(a, collective):
            continue
        if site.branch is not None:
            # paired in its own if; its side still pairs others
            if _other_side_calls(a, site, site.branch, _called(a, collective)):
                key = (id(site.function), _called(a, collective))
                sides.setdefault(key, set()).add(site.branch.taken_at_rank_zero(a.ranks))
                continue
            test = _short(site.branch.node.test)
            when = f"runs only when `{test}`" if site.branch.side == "body" else f"runs only when `not ({test})`"
            where = f"{when} (line {site.branch.node.lineno})"
            zero = site.branch.taken_at_rank_zero(a.ranks)
        else:
            guard = site.early_guard
            assert guard is not None
            if _new_group_between(a, site, guard) or _past_by_flag(a, site, guard):
                continue
            where = f"runs only on the ranks past `if {_short(guard.test)}: {_exit_word(guard)}` (line {guard.lineno})"
            value = a.ranks.at_rank_zero(guard.test)
            zero = None if value is None else not value
        candidates.append((site, collective, where, zero))
    turns: dict[tuple[int, str | None, str], set[bool]] = {}
    for site, collective, _, zero in candidates:
        key = (id(site.function), _called(a, collective))
        sides.setdefault(key, set()).add(zero)
        if (turn := _turn(site)) is not None:
            turns.setdefault((key[0], key[1], turn[0]), set()).add(turn[1])
    for site, collective, where, _ in candidates:
        key = (id(site.function), _called(a, collective))
        turn = _turn(site)
        if {True, False} <= sides[key] or (turn is not None and turns[(key[0], key[1], turn[0])] == {True, False}):
            continue  # a deliberate pair: rank 0 first, or one rank at a time (DRAGON's `!= p_rank` / `== p_rank`)
        via = "" if collective is site.call else f" (it calls {_short(collective.func)}() at line {collective.lineno})"
        gathers = id(collective) in sharded
        helper = collective is site.call and site.qual not in COLLECTIVES and not gathers
        if helper:
            via = " (a helper of the project that makes a collective)"
        if gathers:
            via = f"{via[:-1]}: {gathering_what(a, collective)})" if via else f" ({gathering_what(a, collective)})"
        condition = site.branch.node.test if site.branch is not None else (
            site.early_guard.test if site.early_guard is not None else None)
        flag = condition is not None and _mixes_flags(a, condition)
        if flag:
            where += "; a warning: the condition also tests a flag"
        named = condition is not None and a.ranks.named_only(condition)  # is_master, a parameter called rank
        versioned = a.module.qualname(collective.func) in _VERSIONED
        if versioned:
            via += " (a collective since Lightning 2: it ends in the strategy's barrier)"
        yield a.finding("DDP002", site.call, f"{_short(site.call.func)}(){via} {where}",
                        severity="warning" if helper or flag or versioned or gathers else a.guess("error"),
                        confidence="likely" if named or versioned or gathers else None,
                        fact=f"{where}; the rank test is read from a name alone" if named else "")


def _turn(site: Site) -> tuple[str, bool] | None:
    """The rank comparison ``site``'s branch makes, as ``==`` (``!=`` turned round), and whether the site runs where it
    holds: ``if rank != p: barrier()`` and ``if rank == p: barrier()`` are both polarities of ``rank == p`` (one
    process at a time in ``for p in range(world):``), whatever ``p`` is."""
    branch = site.branch
    test = branch.node.test if branch is not None else None
    if branch is None or not (isinstance(test, ast.Compare) and len(test.ops) == 1
                              and isinstance(test.ops[0], ast.Eq | ast.NotEq)):
        return None
    holds = isinstance(test.ops[0], ast.Eq) == (branch.side == "body")
    return f"{ast.dump(test.left)} == {ast.dump(test.comparators[0])}", holds


def _subgroups(a: Analysis, collective: ast.Call) -> bool:
    """The collective is a subgroup's (``barrier(group=g)`` with ``g = dist.new_group(ranks=[...])``, or a group the
    file is handed: ``group=self.mp_group``): only the group's members call it, and a rank condition around it may be
    the test of membership (TGL's ``if local_rank < num_gpus:`` around its NCCL group of ``range(num_gpus)``); which
    ranks are in it is not read. Not the whole world's (``group=None``, ``dist.group.WORLD``, a ``new_group()`` of
    every rank)."""
    group = next((k.value for k in collective.keywords if k.arg in ("group", "process_group")), None)
    if isinstance(group, ast.Name):
        values = [v for v in [a.module.resolve(group.id, group)[1]] if v is not None]
    elif isinstance(group, ast.Attribute):
        values = a.module.values_anywhere(dotted(group) or "")
    else:
        return False
    return not any(_whole_world(v) for v in (group, *values))


def _whole_world(group: ast.expr) -> bool:
    """``None``, ``dist.group.WORLD``, ``dist.new_group()`` of every rank."""
    return (isinstance(group, ast.Constant) and group.value is None) or (
        isinstance(group, ast.Attribute) and group.attr == "WORLD") or (
        isinstance(group, ast.Call) and last_name(group.func) == "new_group" and not group.args
        and not any(k.arg == "ranks" for k in group.keywords))


def _mixes_flags(a: Analysis, test: ast.expr) -> bool:
    """``if not use_fsdp_eval and not is_rank0``: which ranks pass depends on a flag too (a guess)."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    return isinstance(test, ast.BoolOp) and any(not a.ranks.is_condition(v) for v in test.values)


def _exit_word(guard: ast.If) -> str:
    last = guard.body[-1]
    return {ast.Return: "return", ast.Continue: "continue", ast.Break: "break"}.get(type(last), "raise")


def _past_by_flag(a: Analysis, site: Site, guard: ast.If) -> bool:
    """The collective runs only where a flag part of the early exit's test is false, so every rank reaches it:
    ``if collect_by_master and rank != 0: return``, then ``if not collect_by_master: synchronize()``; or
    ``if not use_fsdp_eval and not is_rank0: return``, then ``if use_fsdp_eval: dist.broadcast(...)`` (open_clip)."""
    exits = guard.test
    parts = exits.values if isinstance(exits, ast.BoolOp) and isinstance(exits.op, ast.And) else [exits]
    flags = {_polarity(part) for part in parts if not a.ranks.is_condition(part)}  # each true where the exit is
    for around, in_body in enclosing_ifs(a.module.parents, site.call):
        base, holds = _polarity(around.test)
        if (base, not holds if in_body else holds) in flags:
            return True
    return False


def _polarity(test: ast.expr) -> tuple[str, bool]:
    """A test as (the expression under its ``not``s, whether the test holds where that expression is true)."""
    holds = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, holds = test.operand, not holds
    return ast.dump(test), holds


def _new_group_between(a: Analysis, site: Site, guard: ast.If) -> bool:
    """A process group started after the early exit (``if rank >= 2: return`` then ``setup(rank, 2)``):
    the collectives that follow are the new group's."""
    return any(guard.lineno < s.call.lineno < site.call.lineno and a.reaching(s, INIT) is not None
               for s in a.flow.sites_in(site.function))


def _called(a: Analysis, collective: ast.Call) -> str:
    """What a collective calls, to pair it with the same call elsewhere: its qualified name, else its code (an FSDP
    model's forward ``model(x)``)."""
    return a.module.qualname(collective.func) or ast.unparse(collective.func)


def _other_side_calls(a: Analysis, site: Site, branch: Branch, name: str) -> bool:
    called = ast.unparse(site.call.func)
    for stmt in branch.other():
        for call in a.module.calls_in(stmt):
            if a.module.qualname(call.func) in (site.qual, name):
                return True
            if any(ast.unparse(v) == called for v in (*call.args, *(k.value for k in call.keywords))):
                return True  # handed over to be called: `wandb.agent(sweep, function=trainer.train)`
            target = a.module.local_function(call)
            if target is not None and name is not None and a.flow.reaches(target, frozenset({name})):
                return True
    return False


def check_destroy(a: Analysis) -> Iterator[Finding]:
    """DDP007: destroy_process_group inside a loop or before later collectives."""
    destroys = [site for site in a.flow.sites
                if (call := a.reaching(site, DESTROY)) is not None and not _destroys_subgroup(a, call)
                and not _setup_with_retry(a, site)]
    # never calling it is not reported: the process exits after training; nothing hangs or leaks that matters
    for site in destroys:
        if site.loops and not a.exits_after(site.call) and not _loop_inits(a, site):
            loop = site.loops[-1]
            yield a.finding("DDP007", site.call, f"{_short(site.call.func)}() inside the loop at line {loop.lineno}",
                            severity=a.guess("error"))
            continue
        later = _later_collective(a, site)
        if later is not None and not a.exits_after(site.call):
            yield a.finding("DDP007", site.call, f"{_short(site.call.func)}() comes before "
                                                 f"{_short(later.func)}() at line {later.lineno}",
                            severity=a.guess("error"))


def _setup_with_retry(a: Analysis, site: Site) -> bool:
    """A call of a function that starts the process group and destroys it on its way (a setup that retries on
    another port: ``init_process_group``, then ``destroy_process_group`` when a peer failed, then again): it leaves a
    group up, so what comes after it is no use after a teardown."""
    return site.qual not in DESTROY and a.reaching(site, INIT) is not None


def _destroys_subgroup(a: Analysis, call: ast.Call) -> bool:
    """``destroy_process_group(group)`` with a group of the script's own (``dist.new_group(...)``): the default
    group lives on, so a loop that makes and destroys one group per iteration is fine. ``None`` or
    ``group.WORLD`` is the default group."""
    if a.module.qualname(call.func) not in DESTROY:
        return False
    group = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "group"), None)
    if group is None or (isinstance(group, ast.Constant) and group.value is None):
        return False
    return not (isinstance(group, ast.Attribute) and group.attr == "WORLD")


def _loop_inits(a: Analysis, destroy: Site) -> bool:
    """The loop around the destroy also starts a process group (one group per iteration: fine)."""
    loop = destroy.loops[-1]
    return any(a.reaching(s, INIT) is not None for s in a.flow.sites_in(destroy.function)
               if s.loops and loop in s.loops and s is not destroy)


def _later_collective(a: Analysis, destroy: Site) -> ast.Call | None:
    """The first collective (or wrapper) after ``destroy`` in its function, or None (a process group started first:
    what follows is the new group's). Not one on the other side of an ``if`` around the destroy (``if
    args.training_optim: train_optim(...)``, ``elif ...: train_continue(...)``, ``else: train(...)``, each ending in
    its teardown): a run takes one side."""
    exclusive = {id(node) for statement, in_body in enclosing_ifs(a.module.parents, destroy.call)
                 for stmt in other_side(statement, in_body) for node in walk(stmt)}
    for site in a.flow.sites_in(destroy.function):
        if site.call.lineno <= destroy.call.lineno or site is destroy or id(site.call) in exclusive:
            continue
        if a.reaching(site, INIT) is not None:
            return None  # a new process group: what follows is fine
        if site.qual in WRAPPERS or a.reaching(site, COLLECTIVES) is not None:
            return site.call
    return None
