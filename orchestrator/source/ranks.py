"""Ranks and devices: which expressions hold a rank, which tests are rank conditions, which values are devices
(those in orchestrator.source.rankdevices). The names that say "rank" (launcher variables, main-process flags, rank
calls) are tables of orchestrator.source.ranknames, read from here too."""

from __future__ import annotations

import ast
from collections.abc import Callable

from orchestrator.source.argflags import local_rank_attributes
from orchestrator.source.assignments import returned_at, unpacked_from
from orchestrator.source.branches import in_block_of
from orchestrator.source.exprnames import FunctionNode, dotted, last_name
from orchestrator.source.names import Module
from orchestrator.source.nodeshift import shifted
from orchestrator.source.rankcompare import FLIPPED, evaluate_at_zero, fold, literal, uniform
from orchestrator.source.rankdevices import DeviceKind as DeviceKind  # (read from here too)
from orchestrator.source.rankdevices import Devices
from orchestrator.source.rankflags import flag_of_rank_zero
from orchestrator.source.ranknames import FRAMEWORK_FLAGS, RANK_CALLS, RANK_GETTER, TRANSPARENT, by_name
from orchestrator.source.ranknames import GLOBAL_ENV as GLOBAL_ENV
from orchestrator.source.ranknames import LOCAL_ENV as LOCAL_ENV
from orchestrator.source.ranknames import LOCAL_NAMES as LOCAL_NAMES
from orchestrator.source.ranknames import MAIN_FLAGS as MAIN_FLAGS
from orchestrator.source.ranknames import NODES_ENV as NODES_ENV
from orchestrator.source.ranknames import RANK_NAMES as RANK_NAMES
from orchestrator.source.ranknames import WORLD_ENV as WORLD_ENV
from orchestrator.source.ranknames import RankKind as RankKind
from orchestrator.source.ranknames import is_main_flag as is_main_flag
from orchestrator.source.spawntargets import started_by_spawner
from orchestrator.source.walk import walk

_MAX_DEPTH = 8
# Collectives after which every rank holds the same value in the object handed to them.
_SHARING = frozenset("torch.distributed." + name for name in (
    "broadcast", "broadcast_object_list", "all_reduce", "all_gather", "all_gather_object"))


class Ranks(Devices):
    device_names = RANK_NAMES | LOCAL_NAMES

    def __init__(self, module: Module, outer: Ranks | None = None) -> None:
        self.module = module
        self.outer = outer  # the script's, for a helper module: flags the script sets (args.should_save)
        self._dependent: dict[tuple[int, bool], bool] = {}
        self.names = True  # whether a name alone (is_master, a parameter called rank) makes a rank: see named_only
        self.project: Callable[[str], tuple[Module, FunctionNode] | None] | None = None  # Project.function
        self.globals: Callable[[str], tuple[Module, list[ast.expr]] | None] | None = None  # Project.global_values
        self._returns: dict[str, RankKind | None] = {}  # what a project function of another module returns
        # whether a project function of another module returns a rank test, and its value on rank 0
        self._tests: dict[tuple[str, bool], tuple[bool, bool | None]] = {}
        self._flags: frozenset[str] | None = None  # see _local_flags

    # -- rank values --------------------------------------------------------------------------------
    def env_key(self, expr: ast.expr) -> str | None:
        """``K`` for ``os.environ["K"]``, ``os.environ.get("K", ...)``, ``os.getenv("K")``."""
        if isinstance(expr, ast.Subscript):
            key = expr.slice
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return None
            if self.module.qualname(expr.value) == "os.environ":
                return key.value
            # a copy of the environment: env_dict = {k: os.environ[k] for k in ...}; env["RANK"]
            holder = (last_name(expr.value) or "").lower()
            return key.value if "env" in holder and key.value in GLOBAL_ENV | LOCAL_ENV else None
        if isinstance(expr, ast.Call) and expr.args and isinstance(expr.args[0], ast.Constant):
            q = self.module.qualname(expr.func)
            if q in ("os.environ.get", "os.getenv", "os.environ.__getitem__") and isinstance(expr.args[0].value, str):
                return expr.args[0].value
        return None

    def source(self, expr: ast.expr, depth: int = 0) -> RankKind | None:
        """What rank ``expr`` holds: the global one, the local one, a rank of unknown kind, or none.
        Arithmetic on a rank (``rank % torch.cuda.device_count()``) is none: silence over a guess."""
        if depth > _MAX_DEPTH:
            return None
        key = self.env_key(expr)
        if key is not None:
            return "global" if key in GLOBAL_ENV else "local" if key in LOCAL_ENV else None
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant) and isinstance(
                expr.slice.value, str):  # a rank kept in a dict under its name: info["rank"], self.ddp_info["rank"]
            return by_name(expr.slice.value) if self.names else None
        if (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "get"
                and expr.args and isinstance(expr.args[0], ast.Constant) and isinstance(expr.args[0].value, str)):
            return by_name(expr.args[0].value) if self.names else None  # config.get("rank", 0): as config["rank"]
        if isinstance(expr, ast.Call):
            q, function = self.module.qualname(expr.func), self.module.local_function(expr)
            # what a project function returns, over its name (def get_local_rank(): return dist.get_rank())
            returned = self.returned(function, depth) if function else self._project_returned(q, depth)
            if returned is not None:
                return returned
            if q == "torch.distributed.get_rank" and (expr.args or expr.keywords):  # a rank within a group
                return None
            if q in RANK_CALLS:
                return RANK_CALLS[q]
            if q is not None and "." in q and q.rsplit(".", 1)[1] in RANK_CALLS:  # utils.get_rank()
                return RANK_CALLS[q.rsplit(".", 1)[1]]
            name = last_name(expr.func) or ""
            if RANK_GETTER.fullmatch(name):  # fs_init.get_data_parallel_rank(), get_global_rank()
                return "local" if "local" in name else "global" if "global" in name else "rankish"
            if q in ("int", "str") and expr.args:
                return self.source(expr.args[0], depth + 1)
            return None
        if isinstance(expr, ast.Name):
            found, value = self.module.resolve(expr.id, expr)
            if value is not None:
                kind = self.source(value, depth + 1)
                if kind is not None:
                    return kind
                if literal(value) and not in_block_of(self.module.parents, value, expr):  # else: rank = 0
                    kinds = {self.source(v, depth + 1) for v in self.module.other_branch(expr.id, expr)} - {None}
                    if len(kinds) == 1:
                        return kinds.pop()
                if found and not isinstance(value, ast.BinOp | ast.Name | ast.Attribute):
                    return None
            if shifted(self.module, expr):  # rank += node_rank * gpus: the global rank from there on
                return "global"
            if value is None and found and (unpacked := self._unpacked(expr, depth)) is not None:
                return unpacked  # local_rank, rank = init_ddp(use_gpu): what init_ddp returns there
            # a parameter is what every call of its function passes, over its name (LNO's train(..., local_rank)
            # called with main's local_rank = dist.get_rank(): the global rank)
            kinds = {self.source(v, depth + 1) for v in self.module.passed_for(expr)} if value is None else set()
            if len(kinds) == 1 and None not in kinds:
                return kinds.pop()
            if self._spawn_index(expr):  # a spawned worker's index: by its name, or the node-local rank where
                return by_name(expr.id) or ("local" if self._started(expr) else None)  # a spawn starts it
            return by_name(expr.id) if self.names else None
        if isinstance(expr, ast.Attribute):
            if shifted(self.module, expr):  # args.local_rank += args.node_index * args.gpu_per_node
                return "global"
            # what the file assigns to it, over its name (Cutie's self.local_rank = dist.get_rank()); an update from
            # itself (``opt.dist_rank = opt.dist_rank * ngpus + index``) keeps what it holds
            key = dotted(expr)
            # a constant is the fallback of the run with no launcher (``self.rank = 0``, then ``if distributed:
            # self.rank = local_rank``), as for a name
            kinds = {self.source(v, depth + 1) for v in self.module.values_anywhere(key or "") if v is not expr
                     and not literal(v)
                     and not any(dotted(n) == key for n in walk(v) if isinstance(n, ast.Attribute))}
            kinds = kinds or self._global_kinds(expr, depth)  # ptu.dist_rank: another module's global
            if not kinds and isinstance(expr.value, ast.Name) and expr.attr in self._local_flags():
                return "local"  # args.rank of add_argument("--rank", "--local_rank"): the launcher's local rank
            return kinds.pop() if len(kinds) == 1 and None not in kinds else (
                by_name(expr.attr) if self.names or self._framework(expr) else None)
        return None

    def _local_flags(self) -> frozenset[str]:
        """The attributes this module's (or the script's) ``--local_rank`` flag fills under another name."""
        if self._flags is None:
            self._flags = local_rank_attributes(self.module.tree) | (
                self.outer._local_flags() if self.outer is not None else frozenset())
        return self._flags

    def _global_kinds(self, expr: ast.Attribute, depth: int) -> set[RankKind | None]:
        """What a module-level name of another project module holds (Segmenter's ``ptu.dist_rank``, set under
        ``global`` from ``SLURM_PROCID``), its constant fallbacks aside."""
        held = self.globals(self.module.qualname(expr) or "") if self.globals is not None else None
        if held is None or depth >= _MAX_DEPTH:
            return set()
        other = Ranks(held[0])
        other.project, other.globals, other.names = self.project, self.globals, self.names
        return {other.source(v, depth + 1) for v in held[1] if not literal(v)}

    def returned(self, function: FunctionNode, depth: int) -> RankKind | None:
        """The rank every non-constant ``return`` of ``function`` gives, when they agree (``return 0`` aside)."""
        kinds = {self.source(r.value, depth + 1) for r in walk(function) if isinstance(r, ast.Return)
                 and r.value is not None and not literal(r.value)}
        return kinds.pop() if len(kinds) == 1 and None not in kinds else None

    def _project_returned(self, qual: str | None, depth: int) -> RankKind | None:
        """:meth:`returned` of the function of another project module ``qual`` names (``comm.get_local_rank()``)."""
        if qual and qual not in self._returns:
            self._returns[qual] = None  # a cycle adds nothing
            other = self._project_reading(qual, depth)
            if other is not None:
                self._returns[qual] = other[0].returned(other[1], depth + 1)
        return self._returns.get(qual or "")

    def _unpacked(self, name: ast.Name, depth: int) -> RankKind | None:
        """The rank at ``name``'s place in the tuples its call's function gives (``local_rank, rank = init_ddp()``)."""
        if (found := unpacked_from(name, self.module.parents)) is None:
            return None
        function = self.module.local_function(found[0])
        if (reading := (self, function) if function else self._project_reading(
                self.module.qualname(found[0].func) or "", depth)) is None:
            return None
        kinds = {reading[0].source(value, depth + 1) for value in returned_at(reading[1], found[1])}
        return kinds.pop() if len(kinds) == 1 and None not in kinds else None

    def _project_test(self, qual: str | None, depth: int) -> tuple[bool, bool | None]:
        """A function of another project module that returns a rank test (``def is_first_worker(): return not
        dist.is_available() or not dist.is_initialized() or dist.get_rank() == 0``): whether it does, and its
        value on rank 0 (None when that cannot be told)."""
        key = (qual or "", self.names)
        if qual and key not in self._tests:
            self._tests[key] = (False, None)  # a cycle adds nothing
            other = self._project_reading(qual, depth)
            if other is not None and other[0]._returns_condition(other[1], depth + 1):
                values = {other[0].at_rank_zero(r.value, depth + 1) for r in walk(other[1])
                          if isinstance(r, ast.Return) and r.value is not None and other[0].is_condition(r.value)}
                self._tests[key] = (True, values.pop() if len(values) == 1 else None)
        return self._tests.get(key, (False, None))

    def _project_reading(self, qual: str, depth: int) -> tuple[Ranks, FunctionNode] | None:
        """The function of another project module ``qual`` names, with a reading of its module."""
        found = self.project(qual) if self.project is not None and depth < _MAX_DEPTH else None
        if found is None:
            return None
        other = Ranks(found[0])
        other.project, other._returns, other._tests, other.names = self.project, self._returns, self._tests, self.names
        other.globals = self.globals
        return other, found[1]

    def dependent(self, expr: ast.expr, depth: int = 0) -> bool:
        """Whether any part of ``expr`` holds a rank (``rank % 2``, ``f"rank{rank}"``)."""
        if depth > _MAX_DEPTH:
            return False
        key = (id(expr), self.names)
        if key not in self._dependent:
            self._dependent[key] = False  # a cycle through assignments adds nothing
            self._dependent[key] = self._depends(expr, depth)
        return self._dependent[key]

    def _depends(self, expr: ast.expr, depth: int) -> bool:
        for node in walk(expr):
            if isinstance(node, ast.Name | ast.Attribute | ast.Call | ast.Subscript) and self.source(node, depth):
                return True
            if isinstance(node, ast.Name):
                _, value = self.module.resolve(node.id, node)
                if value is not None and value is not expr and not self._opaque(value) and self.dependent(
                        value, depth + 1):
                    return True
        return False

    def _opaque(self, value: ast.expr) -> bool:
        """The result of a call that merely takes a rank (``loss = validate(model, rank, loader)``) is not
        a rank: only rank calls, ``int(...)``/``str(...)`` and the environment pass one on."""
        if not isinstance(value, ast.Call) or self.env_key(value) is not None:
            return False
        q = self.module.qualname(value.func) or ""
        last = q.rsplit(".", 1)[-1]
        return not (q in RANK_CALLS or last in RANK_CALLS or last in TRANSPARENT or q == "torch.device"
                    or self.module.local_function(value) is not None)

    # -- rank conditions ----------------------------------------------------------------------------
    def is_condition(self, test: ast.expr, depth: int = 0) -> bool:
        """``rank == 0``, ``dist.get_rank() != 0``, ``is_main``, ``not is_master()``, ``rank == 0 and x``."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(test, ast.BoolOp):
            return any(self.is_condition(value, depth + 1) for value in test.values)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.is_condition(test.operand, depth + 1)
        if isinstance(test, ast.IfExp) and all(isinstance(v, ast.Constant) and isinstance(v.value, bool)
                                               for v in (test.body, test.orelse)):
            return self.is_condition(test.test, depth + 1)  # Hyformer's True if LOCAL_RANK == 0 else False
        if isinstance(test, ast.Compare):
            if uniform(test):
                return False
            return any(self.dependent(part, depth + 1) for part in (test.left, *test.comparators))
        if isinstance(test, ast.Name):
            if self._function_itself(test):
                return False  # `if is_main_process:` (never called): a function object, true on every rank
            _, value = self.module.resolve(test.id, test)
            passed = self.module.passed_for(test)  # a parameter its callers fill with a rank test
            if (value is not None and self.is_condition(value, depth + 1)) or (
                    passed and all(self.is_condition(v, depth + 1) for v in passed)):
                return True
            return ((self.names and test.id in MAIN_FLAGS) or self.source(test, depth + 1) is not None
                    or flag_of_rank_zero(self, test, depth + 1))
        if isinstance(test, ast.Attribute):
            if test.attr in MAIN_FLAGS and (self.names or self._framework(test)):
                return True
            key = dotted(test)  # args.save_logs = args.logs and is_master(args)
            values = self.module.values_anywhere(key) if key is not None else []
            if not values and self.outer is not None and key is not None and "." in key:
                return self.outer.is_condition(test, depth + 1)  # set in the script, tested in its helper
            return bool(values) and (all(self.is_condition(v, depth + 1) for v in values)
                                     or flag_of_rank_zero(self, test, depth + 1))
        if isinstance(test, ast.Call):
            function = self.module.local_function(test)
            if function is not None:
                return self._returns_condition(function, depth + 1)
            if self._project_test(self.module.qualname(test.func), depth)[0]:
                return True
            return (self.names or self._framework(test.func)) and is_main_flag(last_name(test.func))
        return False

    def _function_itself(self, name: ast.Name) -> bool:
        """``name`` is a function of the file or of another project module, not a value it returned: MLPerf UNet3D's
        ``if is_main_process:`` (imported from its ``distributed_utils``, where it is a ``def``)."""
        if name.id in self.module.top_functions and self.module.resolve(name.id, name)[1] is None:
            return True
        qual = self.module.qualname(name)
        return qual is not None and qual != name.id and self.project is not None and self.project(qual) is not None

    def _spawn_index(self, name: ast.Name) -> bool:
        """The first parameter of a function handed to a spawner (``mp.spawn(worker, ...)``): the process index."""
        function = self.module.function_of(name)
        params = [a.arg for a in (*function.args.posonlyargs, *function.args.args)] if function is not None else []
        return function is not None and params[:1] == [name.id] and self.module.spawned(function)

    def _started(self, name: ast.Name) -> bool:
        function = self.module.function_of(name)
        return function is not None and started_by_spawner(self.module, function)

    def _framework(self, expr: ast.expr) -> bool:
        """``accelerator.is_main_process``, ``trainer.is_global_zero``: a framework's own flag, not a guessed name."""
        return (self.module.qualname(expr) or "").startswith(("accelerate.", "lightning.")) or (
            isinstance(expr, ast.Attribute) and expr.attr in FRAMEWORK_FLAGS)

    def named_only(self, test: ast.expr) -> bool:
        """A rank condition that rests on names alone (``if is_master:`` with nothing assigned to it, a parameter
        called ``rank``): no part of it is traced to the environment, a rank call or an assignment of one."""
        self.names = False
        try:
            return not self.is_condition(test)
        finally:
            self.names = True

    def passes_many(self, test: ast.expr, when: bool) -> bool:
        """Whether ``test`` is provably ``when`` on more than one rank: ``rank >= 2`` is False on ranks 0
        and 1 (``if rank >= 2: return`` leaves two ranks running). Unknown tests give False."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.passes_many(test.operand, not when)
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return False
        left, op, right = fold(test.left), test.ops[0], fold(test.comparators[0])
        if isinstance(left, ast.Constant) and not isinstance(right, ast.Constant):
            left, right = right, left
            op = FLIPPED.get(type(op), op)
        if not (isinstance(right, ast.Constant) and isinstance(right.value, int) and self.dependent(left)):
            return False
        c = right.value
        # the ranks r >= 0 on which `r <op> c` equals `when`: one rank, or more?
        single_when_true = {ast.Eq: True, ast.NotEq: False, ast.Lt: c == 1, ast.LtE: c == 0, ast.Gt: False,
                            ast.GtE: False}
        single_when_false = {ast.Eq: False, ast.NotEq: True, ast.Lt: False, ast.LtE: False, ast.Gt: c == 0,
                             ast.GtE: c == 1}
        table = single_when_true if when else single_when_false
        single = table.get(type(op))
        return single is False

    def at_rank_zero(self, test: ast.expr, depth: int = 0) -> bool | None:
        """The value of a rank condition on rank 0 (the parts that do not depend on the rank are taken
        to let it through); None when it cannot be told."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self.at_rank_zero(test.operand, depth + 1)
            return None if inner is None else not inner
        if isinstance(test, ast.BoolOp):
            parts = [self.at_rank_zero(v, depth + 1) for v in test.values if self.is_condition(v, depth + 1)]
            if not parts or None in parts:
                return None
            return all(parts) if isinstance(test.op, ast.And) else any(parts)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, op, right = test.left, test.ops[0], test.comparators[0]
            if self.dependent(right) and not self.dependent(left):
                left, right = right, left
                op = FLIPPED.get(type(op), op)
            return evaluate_at_zero(op, right)
        if isinstance(test, ast.Name | ast.Attribute):
            name = test.id if isinstance(test, ast.Name) else test.attr
            if isinstance(test, ast.Name):
                _, value = self.module.resolve(test.id, test)
                if value is not None and self.is_condition(value, depth + 1):
                    return self.at_rank_zero(value, depth + 1)
                passed = {self.at_rank_zero(v, depth + 1) for v in self.module.passed_for(test)}
                if len(passed) == 1 and None not in passed:  # every caller passes a rank test alike
                    return passed.pop()
            if name in MAIN_FLAGS or flag_of_rank_zero(self, test, depth + 1):
                return True
            return False if self.source(test, depth + 1) is not None else None
        if isinstance(test, ast.Call):
            function = self.module.local_function(test)
            if function is not None:
                values = {self.at_rank_zero(node.value, depth + 1) for node in walk(function)
                          if isinstance(node, ast.Return) and node.value is not None
                          and self.is_condition(node.value, depth + 1)}
                return values.pop() if len(values) == 1 else None
            tests, at_zero = self._project_test(self.module.qualname(test.func), depth)
            return at_zero if tests and at_zero is not None else True if is_main_flag(last_name(test.func)) else None
        return None

    def _returns_condition(self, function: FunctionNode, depth: int) -> bool:
        returns = [node for node in walk(function) if isinstance(node, ast.Return) and node.value is not None]
        return bool(returns) and not self._shares(function, returns) and any(
            self.is_condition(node.value, depth) for node in returns if node.value)

    def _shares(self, function: FunctionNode, returns: list[ast.Return]) -> bool:
        """A function that returns what it handed to a collective that gives every rank the same value
        (``obj = [val]; dist.broadcast_object_list(obj, src=0); return obj[0]``): its result is no rank test."""
        handed = {n.id for call in walk(function) if isinstance(call, ast.Call)
                  and (self.module.qualname(call.func) or "") in _SHARING
                  for arg in call.args[:1] for n in walk(arg) if isinstance(n, ast.Name)}
        return any(isinstance(n, ast.Name) and n.id in handed for r in returns for n in walk(r))
