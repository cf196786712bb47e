"""Names in one module: import aliases -> qualified names, scopes, and simple assignments.

Only what a reader sees in the file: ``import torch.distributed as dist`` makes ``dist.barrier`` the
qualified ``torch.distributed.barrier``; ``x = expr`` makes ``x`` mean ``expr`` for later lines of the
same function (the last such assignment before the line wins; branches are not told apart).
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field

from orchestrator.source.exprnames import FunctionNode, dotted, last_name, parameter_names, positional_parameters
from orchestrator.source.importednames import imported_from
from orchestrator.source.kwargs import subscript_key
from orchestrator.source.walk import walk

# What the conventional short names mean when a snippet uses them without importing them.
CONVENTIONAL: dict[str, str] = {
    "dist": "torch.distributed", "DDP": "torch.nn.parallel.DistributedDataParallel", "mp": "torch.multiprocessing",
    "FSDP": "torch.distributed.fsdp.FullyShardedDataParallel", "DataLoader": "torch.utils.data.DataLoader",
    "DistributedSampler": "torch.utils.data.distributed.DistributedSampler"}

# The training frameworks' objects, by the name they are held in (``accelerator``, ``self.fabric``,
# ``self.trainer.strategy``) or the class they are made from (``acc = Accelerator()``): their methods read as
# the class's (``accelerator.wait_for_everyone`` is ``accelerate.Accelerator.wait_for_everyone``).
FRAMEWORK_HOLDERS: dict[str, str] = {
    "accelerator": "accelerate.Accelerator", "fabric": "lightning.fabric.Fabric",
    "strategy": "lightning.pytorch.strategies.Strategy",
}
_FRAMEWORK_CLASSES: dict[str, str] = {"Accelerator": "accelerate.Accelerator", "Fabric": "lightning.fabric.Fabric"}
# Lightning's Trainer, by the qualified names it is imported under: ``trainer = Trainer(...)`` or a parameter
# annotated ``trainer: pl.Trainer`` (a callback's hook) reads ``trainer.save_checkpoint`` as the Trainer's.
LIGHTNING_TRAINER = "lightning.pytorch.Trainer"
_LIGHTNING_TRAINERS = frozenset(f"{package}.{module}Trainer" for package in ("lightning", "lightning.pytorch",
                                                                            "pytorch_lightning")
                                for module in ("", "trainer.", "trainer.trainer."))
LIGHTNING_MODULE = "lightning.pytorch.LightningModule"  # ``self.all_gather`` in a LightningModule


@dataclass
class Scope:
    """A function (or the module): its assignments by dotted name, and its enclosing scope."""

    node: ast.AST
    parent: Scope | None
    assigned: dict[str, list[tuple[int, ast.expr | None]]] = field(default_factory=dict)

    _lines: dict[str, list[int]] = field(default_factory=dict)

    def record(self, key: str, line: int, value: ast.expr | None) -> None:
        entries = self.assigned.setdefault(key, [])
        entries.append((line, value))
        entries.sort(key=lambda entry: entry[0])
        self._lines.pop(key, None)

    def lines(self, key: str) -> list[int]:
        if key not in self._lines:
            self._lines[key] = [line for line, _ in self.assigned.get(key, [])]
        return self._lines[key]


_CALLS_KEY = "_orch_calls"  # a node's calls (Module.calls_in), kept on the node as source.walk keeps its walk


class Module:
    """One parsed file: aliases, scopes, parents, and the functions defined in it by name."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.parents: dict[ast.AST, ast.AST] = {}
        self.nodes = walk(tree)  # every node, walked once (the walk kept on the tree, not a copy)
        for node in self.nodes:
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.aliases: dict[str, str] = {}
        # every absolute import of a name, in the file's order (``aliases`` keeps the last): a name imported in
        # several branches (``if task == "glue": from tasks.glue.get_trainer import get_trainer``, ``elif ...``)
        self.imports: dict[str, list[str]] = {}
        self.functions: dict[str, FunctionNode] = {}
        # a bare name's call is the module's own function before a method of the same name (``save_model(...)``)
        self.top_functions = {n.name: n for n in tree.body if isinstance(n, FunctionNode)}
        self.classes: dict[str, ast.ClassDef] = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.scopes: dict[ast.AST, Scope] = {}
        self.module_scope = Scope(tree, None)
        self.scopes[tree] = self.module_scope
        self._collect(tree, self.module_scope)
        self._calls_key: frozenset[str] | None = None
        self._calls: dict[int, list[ast.Call]] = {}
        self._calls_to: dict[tuple[frozenset[str], frozenset[tuple[str, str]]], list[ast.Call]] = {}
        self._assignments: dict[str, list[ast.Assign]] | None = None
        self._passed_names: dict[str, list[ast.Name]] | None = None

    # -- collection ---------------------------------------------------------------------------------
    def _collect(self, node: ast.AST, scope: Scope) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, FunctionNode):
                self.functions.setdefault(child.name, child)
                inner = Scope(child, scope)
                self.scopes[child] = inner
                args = child.args
                for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                    if arg is not None:
                        inner.record(arg.arg, child.lineno, None)
                self._collect(child, inner)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.asname:
                        self._imported(alias.asname, alias.name)
                    else:
                        head = alias.name.split(".")[0]
                        self._imported(head, head)
            elif isinstance(child, ast.ImportFrom) and child.module and not child.level:
                for name, qual in imported_from(child):
                    self._imported(name, qual)
            elif isinstance(child, ast.Assign):
                for target in child.targets:
                    self._record_target(scope, target, child.lineno, child.value)
            elif isinstance(child, ast.AnnAssign | ast.AugAssign):
                value = child.value if isinstance(child, ast.AnnAssign) else None
                self._record_target(scope, child.target, child.lineno, value)
            elif isinstance(child, ast.For | ast.AsyncFor):
                self._record_target(scope, child.target, child.lineno, None)
            elif isinstance(child, ast.NamedExpr):
                self._record_target(scope, child.target, child.lineno, child.value)
            elif isinstance(child, ast.withitem) and child.optional_vars is not None:
                self._record_target(scope, child.optional_vars, child.context_expr.lineno, None)
            self._collect(child, scope)

    def _imported(self, name: str, qual: str) -> None:
        self.aliases[name] = qual
        self.imports.setdefault(name, []).append(qual)

    def _record_target(self, scope: Scope, target: ast.expr, line: int, value: ast.expr | None) -> None:
        if isinstance(target, ast.Tuple | ast.List):  # ``rank, local = int(...), int(...)``: each its own value
            values = _paired(target, value)
            for element, element_value in zip(target.elts, values, strict=True):
                self._record_target(scope, element, line, element_value)
            return
        key = dotted(target) or subscript_key(target)
        if key is not None:
            scope.record(key, line, value)

    # -- queries ------------------------------------------------------------------------------------
    def qualname(self, expr: ast.expr) -> str | None:
        """``torch.distributed.barrier`` for ``dist.barrier`` (after ``import torch.distributed as dist``)."""
        name = dotted(expr)
        if name is None:
            return self._super_method(expr)
        framework = self._framework_method(expr)
        if framework is not None:
            return framework
        head, _, rest = name.partition(".")
        full = self.aliases.get(head) or CONVENTIONAL.get(head) or self._class_alias(head, expr) or head
        return f"{full}.{rest}" if rest else full

    def _class_alias(self, head: str, expr: ast.expr) -> str | None:
        """``Exp = Exp_Forecast`` (an imported name given another name): ``Exp(args)`` is ``Exp_Forecast(args)``."""
        if head in self.aliases:
            return None
        _, value = self.resolve(head, expr)
        return self.aliases.get(value.id) if isinstance(value, ast.Name) else None

    def _framework_method(self, expr: ast.expr) -> str | None:
        if not isinstance(expr, ast.Attribute):
            return None
        receiver = expr.value
        root = (dotted(receiver) or "").split(".")[0]
        if root in self.aliases or root in CONVENTIONAL:  # torch.accelerator.device_index: a module's function
            return None
        holder = FRAMEWORK_HOLDERS.get(last_name(receiver) or "")
        if holder is None and isinstance(receiver, ast.Name):
            if receiver.id == "self":
                holder = LIGHTNING_MODULE if self._in_lightning_module(expr) else None
            else:
                _, value = self.resolve(receiver.id, receiver)
                if isinstance(value, ast.Call):
                    holder = _FRAMEWORK_CLASSES.get(last_name(value.func) or "") or self._lightning_trainer(value.func)
                elif value is None:
                    holder = self._lightning_trainer(self._annotation(receiver))
        return f"{holder}.{expr.attr}" if holder is not None else None

    def _lightning_trainer(self, expr: ast.expr | None) -> str | None:
        """:data:`LIGHTNING_TRAINER` when ``expr`` names Lightning's Trainer class."""
        if expr is None or (dotted(expr) or "").split(".")[0] not in self.aliases:
            return None
        return LIGHTNING_TRAINER if self.qualname(expr) in _LIGHTNING_TRAINERS else None

    def _annotation(self, name: ast.Name) -> ast.expr | None:
        """The annotation of the parameter ``name`` of its function, if it is one."""
        function = self.function_of(name)
        if function is None:
            return None
        params = (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)
        return next((p.annotation for p in params if p.arg == name.id), None)

    def _in_lightning_module(self, node: ast.AST) -> bool:
        current = self._class_of(node)
        return current is not None and any((last_name(b) or "").endswith("LightningModule") for b in current.bases)

    def _class_of(self, node: ast.AST) -> ast.ClassDef | None:
        current = self.parents.get(node)
        while current is not None and not isinstance(current, ast.ClassDef):
            current = self.parents.get(current)
        return current

    def _super_method(self, expr: ast.expr) -> str | None:
        """``super().__init__`` in a class whose first base is imported (``BaseTrainer`` from the project's
        ``engine.base_trainer``): ``engine.base_trainer.BaseTrainer.__init__``, the method a call of it runs."""
        if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Call)
                and isinstance(expr.value.func, ast.Name) and expr.value.func.id == "super"):
            return None
        cls = self._class_of(expr)
        base = self.qualname(cls.bases[0]) if cls is not None and cls.bases else None
        return f"{base}.{expr.attr}" if base is not None and "." in base else None

    def scope_of(self, node: ast.AST) -> Scope:
        current = self.parents.get(node)
        while current is not None:
            if current in self.scopes:
                return self.scopes[current]
            current = self.parents.get(current)
        return self.module_scope

    def function_of(self, node: ast.AST) -> FunctionNode | None:
        scope = self.scope_of(node)
        return scope.node if isinstance(scope.node, FunctionNode) else None

    def resolve(self, name: str, node: ast.AST) -> tuple[bool, ast.expr | None]:
        """The value last assigned to ``name`` before ``node``'s line in its scope (or an enclosing
        one): (found, value). found with value None: a parameter or an unpacked/loop target."""
        line = getattr(node, "lineno", 0)
        own = self.scope_of(node)
        entries = own.assigned.get(name, [])
        index = bisect.bisect_left(own.lines(name), line)
        if index:
            return True, entries[index - 1][1]
        scope = own.parent
        while scope is not None:
            if scope.assigned.get(name):
                return True, scope.assigned[name][-1][1]
            scope = scope.parent
        return (True, None) if entries else (False, None)

    def other_branch(self, name: str, node: ast.AST) -> list[ast.expr]:
        """The values the other branch of an ``if`` assigns to ``name`` where the value ``resolve`` gives was
        assigned in one branch: ``if distributed: rank = int(os.environ["LOCAL_RANK"])`` / ``else: rank = 0`` (the
        last assignment by line is the single-process fallback; the distributed path holds the other)."""
        _, value = self.resolve(name, node)
        statement = self.parents.get(value) if value is not None else None
        child, current = statement, self.parents.get(statement) if statement is not None else None
        while current is not None and not isinstance(current, FunctionNode | ast.ClassDef):
            if isinstance(current, ast.If) and child in current.orelse:
                found: list[ast.expr] = []
                while isinstance(current, ast.If) and child in current.orelse:  # up an if/elif/else chain
                    found += [n.value for stmt in current.body for n in walk(stmt) if isinstance(n, ast.Assign)
                              and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)]
                    child, current = current, self.parents.get(current)
                return found
            child, current = current, self.parents.get(current)
        return []

    def values_anywhere(self, key: str) -> list[ast.expr]:
        """Every value assigned to ``key`` (``args.rank``) in any function of the file."""
        return [value for scope in self.scopes.values() for _, value in scope.assigned.get(key, ())
                if value is not None]

    def held(self, key: str, node: ast.AST, anywhere: bool = True) -> list[ast.expr]:
        """The values ``key`` (a name or ``args.rank``, read at ``node``) may hold: its value in scope there, else
        (``anywhere``) every value assigned to it in any function of the file."""
        _, value = self.resolve(key, node)
        return [value] if value is not None else self.values_anywhere(key) if anywhere else []

    def argument_for(self, function: FunctionNode, name: str) -> list[ast.expr]:
        """What the calls of ``function`` in this file pass for its parameter ``name``."""
        found: list[ast.expr] = []
        for node in self.calls_of(function):
            params = positional_parameters(function, node)
            if name in params and params.index(name) < len(node.args):
                found.append(node.args[params.index(name)])
            found.extend(k.value for k in node.keywords if k.arg == name)
        return found

    def calls_of(self, function: FunctionNode) -> list[ast.Call]:
        """The calls in this file of ``function`` (``local_function``), in the file's order. Indexed once per set of
        aliased names: a project adds aliases after reading the module, and ``local_function`` reads them."""
        key = frozenset(self.aliases)
        if self._calls_key != key:
            self._calls_key, self._calls = key, {}
            for node in self.nodes:
                if isinstance(node, ast.Call) and (called := self.local_function(node)) is not None:
                    self._calls.setdefault(id(called), []).append(node)
        return self._calls.get(id(function), [])

    def calls_to(self, quals: frozenset[str]) -> list[ast.Call]:
        """The calls in this file of a callee whose qualified name is in ``quals`` (``torch.multiprocessing.spawn``),
        in the file's order; indexed once per ``quals`` and aliases (``qualname`` reads them)."""
        key = (quals, frozenset(self.aliases.items()))
        if key not in self._calls_to:
            self._calls_to[key] = [n for n in self.nodes if isinstance(n, ast.Call) and self.qualname(n.func) in quals]
        return self._calls_to[key]

    def assignments(self, key: str) -> list[ast.Assign]:
        """The ``=`` statements of this file with ``key`` (``saver``, ``self.ckpt_dir``) among their targets, in the
        file's order."""
        if self._assignments is None:
            self._assignments = {}
            for node in self.nodes:
                if isinstance(node, ast.Assign):
                    for target in dict.fromkeys(dotted(t) for t in node.targets):
                        if target is not None:
                            self._assignments.setdefault(target, []).append(node)
        return self._assignments.get(key, [])

    def passed_for(self, name: ast.Name) -> list[ast.expr]:
        """What this file's calls pass for ``name`` when it is a parameter of its function (``def train(model,
        log_here)`` called ``train(m, rank == 0)``); none for anything else or a function passed around."""
        found, value = self.resolve(name.id, name)
        function = self.function_of(name)
        if value is not None or not found or function is None or self.spawned(function):
            return []
        return self.argument_for(function, name.id) if name.id in parameter_names(function) else []

    def spawned(self, function: FunctionNode) -> bool:
        """``function`` is passed around (``mp.spawn(train, ...)``, not a local of its name): callers out of sight.
        The names read other than as a call's callee are indexed once per file (asked for every parameter)."""
        if self._passed_names is None:
            self._passed_names = {}
            for n in self.nodes:
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and not (
                        isinstance(parent := self.parents.get(n), ast.Call) and parent.func is n):
                    self._passed_names.setdefault(n.id, []).append(n)
        return any(not (self.function_of(n) and n.id in self.scope_of(n).assigned)
                   for n in self._passed_names.get(function.name, ()))

    def named_function(self, name: str) -> FunctionNode | None:
        """What a bare ``name`` means: the module's own ``def name`` before a method of that name (``Model.train``)."""
        return self.top_functions.get(name) or self.functions.get(name)

    def local_function(self, call: ast.Call) -> FunctionNode | None:
        """The function defined in this file that ``call`` calls (``f(...)`` or ``self.f(...)``)."""
        func = call.func
        if isinstance(func, ast.Name) and func.id not in self.aliases:
            return self.named_function(func.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
            return self.functions.get(func.attr)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return self._instance_method(func.value, func.attr)
        return None

    def _instance_method(self, receiver: ast.Name, method: str) -> FunctionNode | None:
        """``saver.save(...)`` with ``saver = Saver(...)`` and ``Saver`` a class of this file: its method ``save``."""
        _, made = self.resolve(receiver.id, receiver) if receiver.id not in self.aliases else (False, None)
        if not (isinstance(made, ast.Call) and isinstance(made.func, ast.Name) and made.func.id not in self.aliases):
            return None
        return self._method_of(made.func.id, method)

    def constructor(self, call: ast.Call) -> FunctionNode | None:
        """``Trainer(cfg)`` of a class of this file: its ``__init__``, which runs (the value is not what it returns)."""
        name = call.func.id if isinstance(call.func, ast.Name) and call.func.id not in self.aliases else ""
        return self._method_of(name, "__init__")

    def _method_of(self, name: str, method: str) -> FunctionNode | None:
        cls = self.classes.get(name)
        return next((n for n in cls.body if isinstance(n, FunctionNode) and n.name == method), None) if cls else None

    def calls_in(self, node: ast.AST) -> Iterator[ast.Call]:
        """Calls inside ``node``, not descending into nested function or class definitions (found once per node and
        kept on it, as ``walk`` keeps a node's descendants: the rules ask for the same statements' calls again)."""
        found: tuple[ast.Call, ...] | None = node.__dict__.get(_CALLS_KEY)
        if found is None:
            calls = []
            stack = [node]
            while stack:
                current = stack.pop()
                if isinstance(current, ast.Call):
                    calls.append(current)
                stack.extend(child for child in ast.iter_child_nodes(current)
                             if not isinstance(child, FunctionNode | ast.ClassDef | ast.Lambda))
            found = tuple(calls)
            setattr(node, _CALLS_KEY, found)
        return iter(found)


def _paired(target: ast.Tuple | ast.List, value: ast.expr | None) -> list[ast.expr | None]:
    """The value each element of a tuple target takes: the matching element of a tuple of the same length and no
    starred element (``a, b = x, y``); unknown (None) for anything else (a call's result, ``a, *b = ...``)."""
    if (isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts)
            and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))):
        return list(value.elts)
    return [None] * len(target.elts)
