"""Where each call sits: under which rank condition, inside which loops, in which function.

Every function body (and the module body) is walked statement by statement. An ``if`` whose test is
a rank condition puts its body and its ``else`` under that condition; ``if not is_main: return``
puts the rest of the block under it. A function called only from guarded places is guarded too.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from orchestrator.source.branches import env_presence, off_linux_side
from orchestrator.source.exprnames import FunctionNode, dotted, last_name
from orchestrator.source.initswitch import Switch, init_switches, switch_of
from orchestrator.source.names import Module
from orchestrator.source.rankcompare import FLIPPED, dead_side, fold
from orchestrator.source.ranks import GLOBAL_ENV, LOCAL_ENV, WORLD_ENV, Ranks
from orchestrator.source.walk import walk
from orchestrator.source.worldsize import launched_world

Loop = ast.For | ast.AsyncFor | ast.While
_EXITS = (ast.Return, ast.Continue, ast.Raise, ast.Break)


@dataclass(frozen=True)
class Branch:
    """One side of a rank-conditioned ``if``."""

    node: ast.If
    side: str  # "body" or "orelse"

    def other(self) -> list[ast.stmt]:
        return self.node.orelse if self.side == "body" else self.node.body

    def taken_at_rank_zero(self, ranks: Ranks) -> bool | None:
        """Whether rank 0 (local rank 0, for a local-rank test) takes this side; None when it cannot be told."""
        value = ranks.at_rank_zero(self.node.test)
        return None if value is None else value == (self.side == "body")


@dataclass(frozen=True)
class Site:
    call: ast.Call
    qual: str | None
    function: FunctionNode | None
    branch: Branch | None  # innermost rank-conditioned branch around the call, in its function
    early_guard: ast.If | None  # the `if <rank condition>: return` before it in its block, if any
    loops: tuple[Loop, ...]  # enclosing loops, in its function


class Flow:
    def __init__(self, module: Module, ranks: Ranks) -> None:
        self.module = module
        self.ranks = ranks
        self.sites: list[Site] = []
        self._walk_block(module.tree.body, None, None, None, ())
        for node in module.nodes:
            if isinstance(node, FunctionNode):
                self._walk_block(node.body, node, None, None, ())
            elif isinstance(node, ast.ClassDef):
                self._walk_block(node.body, self.module.function_of(node), None, None, ())
        self.sites.sort(key=lambda s: (s.call.lineno, s.call.col_offset))
        self._loads: dict[str, list[ast.Name]] = {}
        for node in module.nodes:
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self._loads.setdefault(node.id, []).append(node)
        self.guarded_functions = self._guarded_functions()
        self._dead: list[range] | None = None
        self._switches: frozenset[Switch] | None = None

    # -- walking ------------------------------------------------------------------------------------
    def _walk_block(self, body: list[ast.stmt], function: FunctionNode | None, branch: Branch | None,
                    early: ast.If | None, loops: tuple[Loop, ...]) -> None:
        for stmt in body:
            if isinstance(stmt, FunctionNode | ast.ClassDef):
                continue
            if isinstance(stmt, ast.If):
                self._record(stmt.test, function, branch, early, loops)
                if self.ranks.is_condition(stmt.test):
                    self._walk_block(stmt.body, function, Branch(stmt, "body"), early, loops)
                    self._walk_block(stmt.orelse, function, Branch(stmt, "orelse"), early, loops)
                    if stmt.body and isinstance(stmt.body[-1], _EXITS) and not stmt.orelse:
                        early = stmt
                else:
                    self._walk_block(stmt.body, function, branch, early, loops)
                    self._walk_block(stmt.orelse, function, branch, early, loops)
            elif isinstance(stmt, Loop):
                header = stmt.iter if isinstance(stmt, ast.For | ast.AsyncFor) else stmt.test
                self._record(header, function, branch, early, loops)
                self._walk_block(stmt.body, function, branch, early, (*loops, stmt))
                self._walk_block(stmt.orelse, function, branch, early, loops)
            elif isinstance(stmt, ast.With | ast.AsyncWith):
                for item in stmt.items:
                    self._record(item.context_expr, function, branch, early, loops)
                self._walk_block(stmt.body, function, branch, early, loops)
            elif isinstance(stmt, ast.Try):
                for block in (stmt.body, *[h.body for h in stmt.handlers], stmt.orelse, stmt.finalbody):
                    self._walk_block(block, function, branch, early, loops)
            elif hasattr(ast, "Match") and isinstance(stmt, ast.Match):
                self._record(stmt.subject, function, branch, early, loops)
                for case in stmt.cases:
                    self._walk_block(case.body, function, branch, early, loops)
            else:
                self._record(stmt, function, branch, early, loops)

    def _record(self, node: ast.AST, function: FunctionNode | None, branch: Branch | None, early: ast.If | None,
                loops: tuple[Loop, ...]) -> None:
        for call in self.module.calls_in(node):
            self.sites.append(Site(call, self.module.qualname(call.func), function, branch, early, loops))

    def never_runs(self, site: Site) -> bool:
        """``site`` sits on the side of an ``if`` that no launched rank takes (the single-process ``else`` of ``if
        local_rank != -1:``): it runs on no rank of a distributed run."""
        child: ast.AST = site.call
        parent = self.module.parents.get(child)
        while parent is not None and not isinstance(parent, FunctionNode):
            if isinstance(parent, ast.If) and child is not parent.test:
                dead = self.dead_side(parent.test)
                if dead is not None and any(child is s for s in getattr(parent, dead)):
                    return True
            child, parent = parent, self.module.parents.get(parent)
        return False

    def dead_lines(self) -> list[range]:
        """The lines of each side of an ``if`` that no launched rank takes (:meth:`dead_side`: the ``elif``/``else`` of
        ``if "LOCAL_RANK" in os.environ:``, TabPFN's submitit branch; the single-process side of ``if ddp:``), and the
        statements after a ``return``, ``raise``, ``continue`` or ``break`` in their block (MaskSpec's
        ``init_distributed_mode``, which returns before its set-up: code that never runs)."""
        if self._dead is None:
            self._dead = []
            for node in self.module.nodes:
                side = self.dead_side(node.test) if isinstance(node, ast.If) else None
                statements = getattr(node, side) if side is not None else []
                if statements:
                    self._dead.append(range(statements[0].lineno, (statements[-1].end_lineno or 0) + 1))
                for block in (getattr(node, name, None) for name in ("body", "orelse", "finalbody")):
                    if isinstance(block, list):
                        end = next((i for i, s in enumerate(block) if isinstance(s, _EXITS)), len(block))
                        if end + 1 < len(block):
                            self._dead.append(range(block[end + 1].lineno, (block[-1].end_lineno or 0) + 1))
        return self._dead

    def dead_side(self, test: ast.expr) -> str | None:
        """The side of ``if test:`` that no rank of a launched world of several takes (``"body"``/``"orelse"``), or
        None: a uniform rank comparison (``local_rank != -1``: its ``else``), the world size against one
        (``WORLD_SIZE > 1``), a launcher's variable present (``"RANK" in os.environ``), also through a name or
        ``args.x`` that holds such a test (:meth:`_launcher_binding`; ``if ddp:``, ``if not ddp:``), or the switch the
        file starts its process group under (``initswitch``: ``if ddp:`` where ``ddp`` is handed down from the test
        around ``setup()``); the side of a test of the operating system a Linux node never takes (``if os.name ==
        "nt":``, ``branches.off_linux_side``)."""
        off = off_linux_side(test, self.module.qualname)
        if off is not None:
            return "body" if off else "orelse"
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        name = test.operand if isinstance(test, ast.UnaryOp) and negated else test
        key = name.id if isinstance(name, ast.Name) else dotted(name) if isinstance(name, ast.Attribute) else None
        if key is not None:
            test = self._launcher_binding(key) or test
        if self._switches is None:
            self._switches = init_switches(self.module)
        if key is not None and self._switches and switch_of(self.module, name) in self._switches:
            dead: str | None = "orelse"  # the switch every process group of the file starts under
        elif _launcher_env(test, self.ranks):  # "RANK" in os.environ: true in every launched run
            dead = "orelse"
        elif not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return None
        else:
            value = test.comparators[0] if isinstance(fold(test.left), ast.Constant) else test.left  # -1 < local_rank
            dead = dead_side(test) if self.ranks.dependent(value) else _many_side(test, self.ranks)
        return {"body": "orelse", "orelse": "body"}.get(dead or "") if negated else dead  # `not ddp`: turned round

    def _launcher_binding(self, key: str) -> ast.expr | None:
        """The one value a name or ``args.x`` is given besides defaults of ``False``/``None``/``0`` set before it (and
        ``True``, which only keeps it true), where only a test that the launcher's variables exist stands around it (or
        bound once: nanoGPT's ``ddp = int(os.environ.get("RANK", -1)) != -1``; timm's ``args.distributed = False``, then
        ``if "WORLD_SIZE" in os.environ: args.distributed = int(os.environ["WORLD_SIZE"]) > 1``); a parameter or a loop
        target among its bindings, a second value, or a default set again after it, is none."""
        values = [v for scope in self.module.scopes.values() for _, v in scope.assigned.get(key, ())]
        given = [v for v in values if v is not None and not isinstance(v, ast.Constant)]
        defaults = [v for v in values if isinstance(v, ast.Constant) and not v.value]  # True elsewhere: still true
        if len(given) != 1 or any(v is None for v in values) or any(v.lineno > given[0].lineno for v in defaults):
            return None  # a parameter or loop target among them, or a default set again after the launcher's test
        if len(values) == 1:
            return given[0]  # bound once (``ddp = int(os.environ.get("RANK", -1)) != -1``)
        node: ast.AST | None = self.module.parents.get(given[0])
        while node is not None and not isinstance(node, FunctionNode | ast.Module):
            child, node = node, self.module.parents.get(node)
            if isinstance(node, ast.If) and child is not node.test and not _launcher_present(node.test, self.ranks):
                return None
        return given[0]

    # -- guards -------------------------------------------------------------------------------------
    def _guarded_functions(self) -> set[FunctionNode]:
        """Functions whose every call in this file is guarded by a rank condition (to a fixed point)."""
        callers: dict[FunctionNode, list[Site]] = {}
        for site in self.sites:
            target = self.module.local_function(site.call)
            if target is not None:
                callers.setdefault(target, []).append(site)
        guarded: set[FunctionNode] = set()
        changed = True
        while changed:
            changed = False
            for function, sites in callers.items():
                if function in guarded or self._referenced_elsewhere(function, sites):
                    continue
                if all(site.branch or self.leaves_one(site) or site.function in guarded for site in sites):
                    guarded.add(function)
                    changed = True
        return guarded

    def _referenced_elsewhere(self, function: FunctionNode, sites: list[Site]) -> bool:
        """Passed around (``mp.spawn(train, ...)``, ``Thread(target=f)``): it may run anywhere."""
        called = {id(site.call.func) for site in sites}
        return any(id(node) not in called for node in self._loads.get(function.name, ()))

    def guarded(self, site: Site) -> bool:
        """Whether ``site`` runs only on some ranks (a rank condition around it or around its callers)."""
        return site.branch is not None or self.leaves_one(site) or site.function in self.guarded_functions

    def leaves_one(self, site: Site) -> bool:
        """An early exit before ``site`` lets only one rank through (``if rank != 0: return``);
        ``if rank >= 2: return`` lets two through, which is not a guard for a print."""
        guard = site.early_guard
        return guard is not None and not self.ranks.passes_many(guard.test, when=False)

    # -- helpers for the rules ----------------------------------------------------------------------
    def sites_in(self, function: FunctionNode | None) -> list[Site]:
        return [site for site in self.sites if site.function is function]

    def reaches(self, function: FunctionNode, wanted: frozenset[str], seen: set[str] | None = None,
                off: frozenset[str] = frozenset()) -> ast.Call | None:
        """A call of one of ``wanted`` (qualified names) made by ``function`` or the local functions it
        calls, outside any rank condition; None when there is none. ``off``: parameters of ``function`` the
        caller passes a literal ``False``/``None``/``0`` (:func:`falsy_arguments`): what runs only under ``if
        PARAM:`` never runs for that call (``epoch(model, False)`` and ``if train: dist.reduce(...)``)."""
        seen = set() if seen is None else seen
        if function.name in seen:
            return None
        seen.add(function.name)
        for site in self.sites_in(function):
            if site.branch is not None or (off and _only_when(function, site.call, off)) or any(
                    site.call.lineno in lines for lines in self.dead_lines()):
                continue  # under a rank condition, turned off by the caller, or on a side no launched rank takes
            if site.qual in wanted:
                return site.call
            target = self.module.local_function(site.call) or self.module.constructor(site.call)
            if target is not None:
                found = self.reaches(target, wanted, seen)
                if found is not None:
                    return found
        return None


def falsy_arguments(call: ast.Call, function: FunctionNode) -> frozenset[str]:
    """The parameters of ``function`` that ``call`` passes a literal ``False``, ``None`` or ``0``: by keyword, or by
    position when the call names the function itself (``f(a, False)``; a method's ``self`` would shift them). Not a
    parameter the function assigns again (``train = train or resume``): its later value is not the caller's."""
    assigned = {n.id for n in walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    params = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    given = list(zip(params, call.args, strict=False)) if isinstance(call.func, ast.Name) else []
    given += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
    return frozenset(name for name, value in given
                     if name not in assigned and isinstance(value, ast.Constant) and _falsy(value.value))


def _falsy(value: object) -> bool:
    return value is None or value is False or (type(value) is int and value == 0)


def _only_when(function: FunctionNode, call: ast.Call, names: frozenset[str]) -> bool:
    """``call`` sits in the body of ``if NAME:`` (or the ``else`` of ``if not NAME:``) in ``function``, NAME one of
    ``names``."""
    for node in walk(function):
        if not isinstance(node, ast.If):
            continue
        test, negated = node.test, False
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, negated = test.operand, True
        if not (isinstance(test, ast.Name) and test.id in names):
            continue
        if any(call in walk(stmt) for stmt in (node.orelse if negated else node.body)):
            return True
    return False


def _launcher_present(test: ast.expr, ranks: Ranks) -> bool:
    """A test true in every launched run of the script: :func:`_launcher_env`, or ``__name__ == "__main__"``."""
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__") or (
        _launcher_env(test, ranks))


def _launcher_env(test: ast.expr, ranks: Ranks) -> bool:
    """``"WORLD_SIZE" in os.environ`` (``RANK``, ``LOCAL_RANK``, Slurm's): true wherever a launcher started the run;
    also ``"RANK" in os.environ and "WORLD_SIZE" in os.environ`` (every part such a test; one part of an ``or``)."""
    if isinstance(test, ast.BoolOp):
        parts = [_launcher_env(value, ranks) for value in test.values]
        return all(parts) if isinstance(test.op, ast.And) else any(parts)
    found = env_presence(ranks.module.qualname, test)
    return found is not None and found[1] and found[0] in WORLD_ENV | GLOBAL_ENV | LOCAL_ENV


def _many_side(test: ast.Compare, ranks: Ranks) -> str | None:
    """The side no rank of a world of several takes, on the launcher's world size against 1 (``WORLD_SIZE > 1``:
    ``"orelse"``; ``== 1``, ``< 2``: ``"body"``); a world of one process is no distributed run."""
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(fold(left), ast.Constant):
        left, right, op = right, left, FLIPPED.get(type(op), op)
    while isinstance(left, ast.Call) and last_name(left.func) == "int" and len(left.args) == 1:
        left = left.args[0]
    bound = fold(right)
    if not isinstance(bound, ast.Constant) or bound.value not in (1, 2) or not launched_world(ranks.module, left,
                                                                                            ranks.env_key):
        return None
    one, two = bound.value == 1, bound.value == 2
    if (isinstance(op, ast.Gt) and one) or (isinstance(op, ast.GtE) and two) or (isinstance(op, ast.NotEq) and one):
        return "orelse"
    if (isinstance(op, ast.Eq) and one) or (isinstance(op, ast.Lt) and two) or (isinstance(op, ast.LtE) and one):
        return "body"
    return None
