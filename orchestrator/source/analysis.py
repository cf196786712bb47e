"""One file's analysis: names, ranks, call sites, the script's project, and the questions asked of them (what the
doctor's rules and the launch styles' facts read; ``orchestrator.doctor.analysis`` adds the findings)."""

from __future__ import annotations

import ast
from functools import cached_property
from pathlib import Path

from orchestrator.source.definitions import definition
from orchestrator.source.exprnames import FunctionNode, dotted, last_name
from orchestrator.source.flow import Flow, Loop, Site, falsy_arguments
from orchestrator.source.names import LIGHTNING_MODULE, LIGHTNING_TRAINER, Module
from orchestrator.source.project import Project, Reach
from orchestrator.source.ranks import Ranks
from orchestrator.source.spawntargets import SPAWNERS as SPAWNERS  # (read from here too)
from orchestrator.source.spawntargets import spawn_target as spawn_target  # (read from here too)
from orchestrator.source.walk import walk

_D = "torch.distributed."
# The frameworks' collectives (every rank must call them, as torch.distributed's): class -> methods
_FRAMEWORK_COLLECTIVES: dict[str, tuple[str, ...]] = {
    "accelerate.Accelerator": ("wait_for_everyone", "gather", "gather_for_metrics", "reduce", "pad_across_processes"),
    "accelerate.utils": ("wait_for_everyone", "gather", "gather_object", "reduce", "broadcast",
                         "broadcast_object_list", "pad_across_processes"),
    "lightning.fabric.Fabric": ("barrier", "all_reduce", "all_gather", "broadcast"),
    "lightning.pytorch.strategies.Strategy": ("barrier", "reduce", "all_gather", "broadcast",
                                              "reduce_boolean_decision"),
    LIGHTNING_MODULE: ("all_gather",),
    LIGHTNING_TRAINER: ("save_checkpoint",),  # ends in the strategy's barrier (Lightning 2)
}
_FRAMEWORK_REDUCTIONS = frozenset({"gather", "gather_for_metrics", "gather_object", "reduce", "all_reduce",
                                   "all_gather"})
FRAMEWORK_COLLECTIVES = frozenset(f"{owner}.{m}" for owner, methods in _FRAMEWORK_COLLECTIVES.items() for m in methods)
COLLECTIVES = frozenset(_D + name for name in (
    "barrier", "monitored_barrier", "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
    "all_gather_object", "gather", "gather_object", "scatter", "scatter_object_list", "reduce_scatter",
    "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "broadcast_object_list", "new_group",
)) | FRAMEWORK_COLLECTIVES
REDUCTIONS = frozenset(_D + name for name in (
    "all_reduce", "reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "gather",
    "gather_object", "reduce_scatter", "reduce_scatter_tensor",
)) | frozenset(q for q in FRAMEWORK_COLLECTIVES if q.rsplit(".", 1)[1] in _FRAMEWORK_REDUCTIONS)
# A framework that runs the data-parallel training: its setup calls (Fabric's, Accelerate's)
FRAMEWORK_SETUP = frozenset({"lightning.fabric.Fabric.setup", "lightning.fabric.Fabric.setup_module",
                             "accelerate.Accelerator.prepare", "accelerate.Accelerator.prepare_model"})
WRAPPERS = frozenset({
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
})
INIT = frozenset({_D + "init_process_group"})
# what a failed rendezvous raises (torch's DistError family, a RuntimeError, a ValueError for a missing RANK, a
# timeout): a handler of none of them (``except KeyboardInterrupt``, ``except KeyError``) lets the failure stop the rank
INIT_FAILURES = frozenset({"Exception", "BaseException", "RuntimeError", "ValueError", "OSError", "TimeoutError",
                           "ConnectionError", "DistError", "DistBackendError", "DistNetworkError", "DistStoreError"})
# the calls that end the process where they are made (ECAPA-TDNN's `destroy_process_group(); quit()`)
EXIT_CALLS = frozenset({"sys.exit", "exit", "quit", "os._exit", "os.abort"})
DESTROY = frozenset({_D + "destroy_process_group"})
SET_DEVICE = frozenset({"torch.cuda.set_device", "torch.cuda.device", "torch.accelerator.set_device_index",
                        "torch.accelerator.device_index"})
# a framework's command line that builds the classes it is handed and runs their methods (Lightning's LightningCLI
# calls the LightningModule's hooks): its parameters that take a class, by position and by keyword
_CLASS_RUNNERS: dict[str, tuple[str, ...]] = {"LightningCLI": ("model_class", "datamodule_class")}


def project_path(filename: str) -> Path | None:
    """The script's path when ``filename`` names a file on disk (not ``<string>``)."""
    path = Path(filename)
    return path if filename and not filename.startswith("<") and path.is_file() else None


class Analysis:
    def __init__(self, tree: ast.Module, filename: str, *, outer: Analysis | None = None) -> None:
        """``outer``: the script whose project this module (a helper) belongs to; a helper is not followed
        further, and what the script does (its calls, its helpers' calls) counts for it too."""
        self.filename = filename
        self.module = Module(tree)
        self.outer = outer
        script = project_path(filename) if outer is None else None
        self.project = Project(script, self.module, tree) if script is not None else None
        self.ranks: Ranks = Ranks(self.module, outer.ranks if outer is not None else None)
        # a helper's calls reach the script's project
        self.script_project = self.project if outer is None else outer.project
        self.ranks.project = self.script_project.function if self.script_project is not None else None
        self.ranks.globals = self.script_project.global_values if self.script_project is not None else None
        self.flow = Flow(self.module, self.ranks)
        self._trains: dict[str, bool] = {}
        self._helpers: dict[int, Reach | None] = {}

    # -- the script's own project -------------------------------------------------------------------
    def helper(self, site: Site) -> Reach | None:
        """What ``site`` reaches when it calls a function of a local module (None: it does not)."""
        key = id(site.call)
        if key not in self._helpers:
            self._helpers[key] = self._reach(site) if self.project is not None else None
        return self._helpers[key]

    def _reach(self, site: Site) -> Reach | None:
        """What ``site`` reaches: the project function it calls, or the project classes it hands a framework's
        command line (``LightningCLI(Point2Vec)``: Lightning runs the class's hooks)."""
        assert self.project is not None
        own = self.project.reach(site.qual)
        params = _CLASS_RUNNERS.get(self._class_runner(site.qual), ())
        handed = [self.module.qualname(c) for c in (
            *site.call.args[:len(params)], *(k.value for k in site.call.keywords if k.arg in params))]
        if params and not handed:  # LightningCLI(): the classes come from the config, the file imports them to offer
            handed = [q for q in self.module.aliases.values() if isinstance(
                (self.project.definition(q) or (None, None, None))[2], ast.ClassDef)]
        reaches = [r for r in (own, *(self.project.reach(q) for q in handed)) if r is not None]
        if len(reaches) < 2:
            return next(iter(reaches), None)
        unread = next((r.unread for r in reaches if r.unread), None)
        return Reach(frozenset().union(*(r.quals for r in reaches)), unread)

    def _class_runner(self, qual: str | None, depth: int = 0) -> str:
        """The name of the framework's class-running command line ``qual`` is (``LightningCLI``), also through a class
        of the file built on it (``class CustomLightningCLI(LightningCLI)``); "" for another call."""
        parts = (qual or "").split(".")
        if parts[0] in ("lightning", "pytorch_lightning") and parts[-1] in _CLASS_RUNNERS:
            return parts[-1]
        cls = definition(self.module, qual) if qual and "." not in qual and depth < 4 else None
        bases = cls.bases if isinstance(cls, ast.ClassDef) else []
        return next((found for b in bases if (found := self._class_runner(self.module.qualname(b), depth + 1))), "")

    def helper_reaches(self, site: Site, wanted: frozenset[str]) -> bool:
        reach = self.helper(site)
        return reach is not None and not reach.quals.isdisjoint(wanted)

    def helper_sites(self, wanted: frozenset[str]) -> list[Site]:
        return [site for site in self.flow.sites if self.helper_reaches(site, wanted)]

    def read_modules(self) -> list[Module]:
        """This file's module, the script's (when this file is a helper it calls) and the project modules the
        script's calls reach (read here if not yet): where a rule looks for what the project does anywhere."""
        root = self.outer if self.outer is not None else self
        list(root.helper_quals)  # reads the helpers the script's calls reach
        helpers = [module for _, module in root.project.helpers()] if root.project is not None else []
        return [self.module, *([root.module] if root is not self else []), *helpers]

    @cached_property
    def helper_quals(self) -> frozenset[str]:
        """Every qualified name reached through the project's helpers the script calls."""
        out: set[str] = set()
        if self.outer is not None:
            out |= self.outer.helper_quals | {s.qual for s in self.outer.flow.sites if s.qual}
        for site in self.flow.sites:
            reach = self.helper(site)
            if reach is not None:
                out |= reach.quals
        return frozenset(out)

    @cached_property
    def unread(self) -> str | None:
        """A local helper the script calls that could not be read (its file or module), if any."""
        return next((r.unread for s in self.flow.sites if (r := self.helper(s)) is not None and r.unread), None)

    def handed(self, name: ast.Name) -> list[ast.expr] | None:
        """What this file's calls of ``name``'s function hand it, when ``name`` reads a parameter that nothing in
        the function assigns (``def train_one_epoch(model, logger): logger.info(...)``); None when it is not such a
        parameter."""
        found, made = self.module.resolve(name.id, name)
        function = self.module.function_of(name)
        return self.passes_for(function, name.id) if found and made is None and function is not None else None

    def passes_for(self, function: FunctionNode, name: str) -> list[ast.expr]:
        """What this file's calls of a function named as ``function`` pass for its parameter ``name``: a helper's
        function, defined in another file and called here as ``save(...)`` or ``helpers.save(...)``; by position (a
        method's ``self`` bound) and by keyword."""
        params = [p.arg for p in (*function.args.posonlyargs, *function.args.args)]
        index = params.index(name) - (params[:1] == ["self"]) if name in params else -1
        found: list[ast.expr] = []
        for node in self.module.nodes:
            if isinstance(node, ast.Call) and last_name(node.func) == function.name:
                found += [node.args[index]] if 0 <= index < len(node.args) else []
                found += [k.value for k in node.keywords if k.arg == name]
        return found

    def sites(self, quals: frozenset[str]) -> list[Site]:
        return [site for site in self.flow.sites if site.qual in quals]

    def sites_ending(self, suffix: str) -> list[Site]:
        return [site for site in self.flow.sites if site.qual and (site.qual == suffix or
                                                                   site.qual.endswith("." + suffix))]

    @cached_property
    def distributed(self) -> bool:
        """The file sets up or uses torch.distributed, DDP/FSDP or a DistributedSampler."""
        quals = [site.qual or "" for site in self.flow.sites] + list(self.helper_quals)
        return self.env_launched or any(q.startswith(_D) or q in WRAPPERS or q.endswith("DistributedSampler")
                                        or q.endswith("multiprocessing.spawn") for q in quals)

    @cached_property
    def env_launched(self) -> bool:
        """The script reads the launcher's WORLD_SIZE and LOCAL_RANK (alpaca-lora's ``ddp = world_size != 1``
        with ``device_map={"": int(os.environ.get("LOCAL_RANK") or 0)}``): a library (the HF Trainer) runs the
        data-parallel training that the script sets up for the launcher."""
        keys = {self.ranks.env_key(node) for node in self.module.nodes if isinstance(node, ast.Subscript | ast.Call)}
        return self.outer is None and {"WORLD_SIZE", "LOCAL_RANK"} <= keys

    @cached_property
    def spawns(self) -> bool:
        """The script starts its own processes with torch.multiprocessing.spawn (one node)."""
        return any((site.qual or "").endswith("multiprocessing.spawn") for site in self.flow.sites)

    @cached_property
    def spawned_reach(self) -> frozenset[int] | None:
        """The ids of the file's functions, classes' methods and classes that the workers it spawns call, name or
        reach (``self.load(...)``: any method so named). None when the file spawns nothing, or a worker is not one of
        its own top-level functions (a ``partial``, another module's), or a worker is also called directly (``if
        launched: train(cfg) else: mp.spawn(train, ...)``: under a launcher, what the caller does runs in every
        rank)."""
        workers = [spawn_target(call) for call in self.module.calls_to(SPAWNERS)]
        names = [w.id for w in workers if isinstance(w, ast.Name) and w.id in self.module.top_functions]
        if not workers or len(names) != len(workers) or any(
                self.module.calls_of(self.module.top_functions[name]) for name in names):
            return None
        functions: dict[str, list[ast.AST]] = {name: [f] for name, f in self.module.top_functions.items()}
        functions.update({name: list(c.body) for name, c in self.module.classes.items()})
        methods: dict[str, list[ast.AST]] = {}
        for c in self.module.classes.values():
            for m in c.body:
                if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef):
                    methods.setdefault(m.name, []).append(m)
        reached: set[int] = set()
        todo: list[ast.AST] = [self.module.top_functions[name] for name in names]
        while todo:
            node = todo.pop()
            if id(node) in reached:
                continue
            reached.add(id(node))
            for inner in walk(node):
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load):
                    todo.extend(functions.get(inner.id, ()))
                elif isinstance(inner, ast.Attribute):
                    todo.extend(methods.get(inner.attr, ()))
        return frozenset(reached)

    @cached_property
    def data_parallel(self) -> bool:
        """The file wraps a model in DDP/FSDP or starts a process group (data-parallel training)."""
        return bool(self.sites(WRAPPERS | INIT)) or not self.helper_quals.isdisjoint(WRAPPERS | INIT) or (
            self.env_launched)

    @cached_property
    def framework_parallel(self) -> bool:
        """A framework (Fabric, Accelerate) wraps the model for data-parallel training: ``fabric.setup(model,
        optimizer)``, ``accelerator.prepare(model, ...)``."""
        return bool(self.sites(FRAMEWORK_SETUP)) or not self.helper_quals.isdisjoint(FRAMEWORK_SETUP)

    def reaching(self, site: Site, wanted: frozenset[str]) -> ast.Call | None:
        """The call of ``wanted`` that ``site`` makes, itself or through a function of this file."""
        if site.qual in wanted or self.helper_reaches(site, wanted):
            return site.call
        target = self.module.local_function(site.call)
        return self.flow.reaches(target, wanted, off=falsy_arguments(site.call, target)) if target is not None else None

    def wrapped(self, expr: ast.expr) -> bool:
        """``expr`` is (a name bound to) ``DDP(...)`` / ``FSDP(...)``."""
        if isinstance(expr, ast.Call):
            return self.module.qualname(expr.func) in WRAPPERS
        key = dotted(expr)
        if key is None:
            return False
        _, value = self.module.resolve(key, expr)
        values = [value] if value is not None else self.module.values_anywhere(key) if "." in key else []
        return any(isinstance(v, ast.Call) and self.module.qualname(v.func) in WRAPPERS for v in values)

    # -- training loops -----------------------------------------------------------------------------
    def trains(self, node: ast.AST, seen: frozenset[str] = frozenset()) -> bool:
        """``node`` calls ``.backward()``, itself or through a function of this file."""
        for call in self.module.calls_in(node):
            if isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
                return True
            target = self.module.local_function(call)
            if target is not None and target.name not in seen:
                if target.name not in self._trains:
                    self._trains[target.name] = any(self.trains(s, seen | {target.name}) for s in target.body)
                if self._trains[target.name]:
                    return True
        return False

    def in_training_loop(self, site: Site) -> Loop | None:
        return next((loop for loop in reversed(site.loops) if self.trains(loop)), None)

    # -- statements ---------------------------------------------------------------------------------
    def statement_of(self, node: ast.AST) -> ast.stmt | None:
        current: ast.AST | None = node
        while current is not None and not isinstance(current, ast.stmt):
            current = self.module.parents.get(current)
        return current

    def exits_after(self, node: ast.AST) -> bool:
        """The block holding ``node``'s statement leaves after it (break/return/raise/exit), or the ``if``/``with``/
        ``try`` around it does (``if done: if distributed: destroy_process_group()`` then ``return``)."""
        stmt: ast.AST | None = self.statement_of(node)
        while stmt is not None and (parent := self.module.parents.get(stmt)) is not None:
            for field in ("body", "orelse", "finalbody", "handlers"):
                block = getattr(parent, field, None)
                if isinstance(block, list) and stmt in block and any(
                        self._exits(later) for later in block[block.index(stmt) + 1:]):
                    return True
            if not isinstance(parent, ast.If | ast.With | ast.Try | ast.ExceptHandler):
                return False
            stmt = parent
        return False

    def _exits(self, stmt: ast.stmt) -> bool:
        return isinstance(stmt, ast.Break | ast.Return | ast.Raise) or (
            isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and self.module.qualname(stmt.value.func) in EXIT_CALLS)
