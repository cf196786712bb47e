"""A spawner for one node as a fact: the function a spawn starts hands its spawn index, unchanged, to
``init_process_group(rank=...)`` or ``DistributedSampler(rank=...)`` (itself or through the functions and classes it
passes the index to, in its file or the project's modules: ``def main_worker(rank, args): training(rank, args)``,
``Trainer(rank=gpu, cfg=cfg)`` whose ``__init__`` joins the group, ``train_fn(rank, world)`` imported from the
project; ``device = rank``, ``init_process_group(..., rank=device)``), or writes it into the environment as ``RANK``
(``os.environ["RANK"] = str(rank)``, ``os.environ.update({"RANK": str(rank), ...})``: the group then reads it, and
so does everything else that asks the environment for the rank). The spawn index is the rank on its node:
started once per node (the ``per-node`` style), every node's processes claim ranks 0..nprocs-1 of one world, so such
a script works on one node only. Not a fact when the rank is built from the index (``rank = args.nr * args.gpus +
gpu``: a node's offset) or the index is given another value before it is passed on."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from orchestrator.source.analysis import Analysis, spawn_target
from orchestrator.source.assignments import assigned, assignment_before
from orchestrator.source.branches import enclosing_ifs, off_linux_side
from orchestrator.source.exprnames import FunctionNode, dotted, last_name
from orchestrator.source.names import Module
from orchestrator.source.project import Project
from orchestrator.source.walk import walk

_DEPTH = 3
# the calls whose ``rank=`` must be the global rank: the group's, and a sampler's shard of the whole world
# (``DistributedSampler(data, num_replicas=world_size, rank=local_rank)``: every node reads the first node's shards)
_TAKE_THE_RANK = frozenset({"init_process_group", "DistributedSampler"})


@dataclass(frozen=True)
class IndexRank:
    """Where a spawn index becomes the global rank: ``node``, the ``init_process_group``/``DistributedSampler`` call
    or the statement that writes ``RANK``, in ``file``; ``line``, the line of the rank given (its ``rank=``
    argument's, the ``RANK`` entry's); ``given``, that rank's source (``rank=gpu``, ``RANK=str(rank)``)."""

    file: str
    node: ast.AST
    line: int
    given: str
    call: ast.Call | None = None  # the init_process_group/DistributedSampler call given the index as its rank


@dataclass(frozen=True)
class _Callee:
    """A function the index is passed to: its file, module and definition; ``bound``: a method or a class's
    ``__init__``, whose first parameter (``self``) takes no argument."""

    file: str
    module: Module
    function: FunctionNode
    bound: bool = False


def index_as_rank(a: Analysis, spawn: ast.Call) -> IndexRank | None:
    """Where ``spawn``'s index (the started function's first parameter) becomes the global rank, or None. The
    started function is the file's own or one it imports from the script's project (``from utils.train import
    train``; ``mp.spawn(train, ...)``; ``mp.spawn(fn=loader.load_worker, ...)``)."""
    target = spawn_target(spawn)
    if last_name(spawn.func) == "Process" and not _handed_a_count(a, spawn):  # Process(target=run, args=(i, ...))
        return None
    project = a.script_project
    if isinstance(target, ast.Name) and target.id not in a.module.functions:
        target = _handed_in(a, spawn, target.id) or target  # def run_distributed(fn, ...): mp.spawn(fn, ...)
    found = _started(a, project, target) if isinstance(target, ast.Name | ast.Attribute) else None
    if found is None:
        return None
    params = _params(found)
    return _reaches(project, found, params[0], 0, set()) if params else None


def _handed_in(a: Analysis, spawn: ast.Call, name: str) -> ast.Name | None:
    """The function of the file that every call of the function around ``spawn`` hands it as its parameter
    ``name`` (``run_distributed(run_training, config, args)`` for ``def run_distributed(fn, config, args):
    mp.spawn(fn, ...)``); None where the calls hand different ones, or none is found."""
    function = a.module.function_of(spawn)
    calls = a.module.calls_of(function) if function is not None else []
    handed = a.module.argument_for(function, name) if function is not None else []
    if not calls or len(handed) != len(calls) or not all(
            isinstance(value, ast.Name) and value.id in a.module.functions for value in handed):
        return None
    names = {value.id for value in handed if isinstance(value, ast.Name)}
    return ast.Name(id=names.pop(), ctx=ast.Load()) if len(names) == 1 else None


def _handed_a_count(a: Analysis, process: ast.Call) -> bool:
    """The ``Process`` is handed, first, the name a ``for`` around it counts from 0 (``for i in range(n_gpus):
    Process(target=run, args=(i, ...))``): a spawn index like ``mp.spawn``'s. Not a range with a start
    (``range(node_rank * per_node, ...)``: the node's offset is in it)."""
    handed = next((k.value for k in process.keywords if k.arg == "args"), None)
    first = handed.elts[0] if isinstance(handed, ast.Tuple | ast.List) and handed.elts else None
    if not isinstance(first, ast.Name):
        return False
    current = a.module.parents.get(process)
    while current is not None and not isinstance(current, FunctionNode | ast.ClassDef | ast.Module):
        if isinstance(current, ast.For) and isinstance(current.target, ast.Name) and current.target.id == first.id:
            counts = current.iter
            return (isinstance(counts, ast.Call) and last_name(counts.func) == "range" and not counts.keywords
                    and (len(counts.args) == 1 or (len(counts.args) == 2 and isinstance(counts.args[0], ast.Constant)
                                                   and counts.args[0].value == 0)))
        current = a.module.parents.get(current)
    return False


def _started(a: Analysis, project: Project | None, target: ast.Name | ast.Attribute) -> _Callee | None:
    """The function a spawn starts: this file's, or the project module's it imports (``train``, or
    ``loader.load_worker`` after ``import loader``)."""
    local = a.module.named_function(target.id) if isinstance(target, ast.Name) else None
    if local is not None:
        return _Callee(a.filename, a.module, local)
    qual = a.module.qualname(target)
    return _in_project(project, qual) if qual is not None else None


def _in_project(project: Project | None, qual: str) -> _Callee | None:
    """The project's function ``qual`` names, or its class's ``__init__`` (``from managers.trainer import
    Trainer``), with its file; through a package's re-export (``from core import Trainer``, whose ``__init__`` says
    ``from .trainer import Trainer``)."""
    found = project.definition(qual) if project is not None else None
    if found is None:
        return None
    path, module, node = found
    if isinstance(node, ast.ClassDef):
        init = _init_of(node)
        return _Callee(str(path), module, init, bound=True) if init is not None else None
    return _Callee(str(path), module, node)


def _init_of(cls: ast.ClassDef) -> FunctionNode | None:
    return next((node for node in cls.body if isinstance(node, FunctionNode) and node.name == "__init__"), None)


def _callee(project: Project | None, caller: _Callee, call: ast.Call) -> _Callee | None:
    """The function ``call`` runs: a function or method of the caller's file (``setup(rank)``,
    ``self.setup(rank)``), a class of it (its ``__init__``), or a function or class the file imports from the
    project."""
    module = caller.module
    local = module.local_function(call)
    if local is not None:
        method = isinstance(call.func, ast.Attribute)
        return _Callee(caller.file, module, local, bound=method)
    if isinstance(call.func, ast.Name) and call.func.id not in module.aliases:
        cls = module.classes.get(call.func.id)
        init = _init_of(cls) if cls is not None else None
        return _Callee(caller.file, module, init, bound=True) if init is not None else None
    qual = module.qualname(call.func) if isinstance(call.func, ast.Name | ast.Attribute) else None
    return _in_project(project, qual) if qual is not None else None


def _params(callee: _Callee) -> list[str]:
    params = [p.arg for p in (*callee.function.args.posonlyargs, *callee.function.args.args)]
    return params[1:] if callee.bound else params


def _reaches(project: Project | None, callee: _Callee, param: str, depth: int,
             seen: set[tuple[str, str]]) -> IndexRank | None:
    function = callee.function
    if depth > _DEPTH or (callee.file, f"{function.name}:{function.lineno}") in seen:
        return None
    seen.add((callee.file, f"{function.name}:{function.lineno}"))
    parents = {child: node for node in walk(function) for child in ast.iter_child_nodes(node)}
    for node in walk(function):
        if _off_linux(callee.module, node, parents):
            continue  # StyleGAN-XL's `if os.name == "nt":` gloo init: the Linux one in its `else` is the cluster's
        written = _rank_written(callee.module, node)
        if written is not None and _holds(written[1].id, node, param, parents, 0):
            return IndexRank(callee.file, node, written[0].lineno, f"RANK={ast.unparse(written[0])}")
        if not isinstance(node, ast.Call):
            continue
        if last_name(node.func) in _TAKE_THE_RANK:
            rank = next((k.value for k in node.keywords if k.arg == "rank"), None)
            key = dotted(rank) if isinstance(rank, ast.Name | ast.Attribute) else None
            chain: list[ast.stmt] = []
            if rank is not None and key is not None and _holds(key, node, param, parents, 0, chain):
                if "." in key:  # an attribute's rank (``args.rank = gpu``) is given where it is assigned
                    return IndexRank(callee.file, chain[0], chain[0].lineno, f"rank={key}", node)
                return IndexRank(callee.file, node, rank.lineno, f"rank={key}", node)
            continue
        inner = _callee(project, callee, node)
        if inner is None or inner.function is function:
            continue
        params = _params(inner)
        passed = [*zip(params, node.args, strict=False), *((k.arg, k.value) for k in node.keywords if k.arg)]
        for name, arg in passed:
            if name in params and isinstance(arg, ast.Name) and _holds(arg.id, node, param, parents, 0):
                found = _reaches(project, inner, name, depth + 1, seen)
                if found is not None:
                    return found
    return None


def _off_linux(module: Module, node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """``node`` is on the side of an ``if`` testing the operating system that a Linux node never takes."""
    return any(off_linux_side(test.test, module.qualname) is in_body
               for test, in_body in enclosing_ifs(parents, node))


def _holds(name: str, at: ast.AST, param: str, parents: dict[ast.AST, ast.AST], depth: int,
           chain: list[ast.stmt] | None = None) -> bool:
    """``name`` holds the index where ``at`` runs: its last assignment in the blocks around ``at`` copies a name
    that holds it (``device = rank``, ``args.rank = gpu``: those assignments appended to ``chain``), or none assigns
    it and it is the index's parameter."""
    earlier = assignment_before(name, at, parents) if depth <= _DEPTH else None
    if earlier is None:
        return name == param
    if earlier is False:
        return False
    if chain is not None:
        chain.append(earlier)
    value = assigned(earlier, name)
    return isinstance(value, ast.Name) and _holds(value.id, earlier, param, parents, depth + 1, chain)


def _rank_written(module: Module, node: ast.AST) -> tuple[ast.expr, ast.Name] | None:
    """The value ``node`` writes into the environment as ``RANK`` and the name it is made of, or None."""
    value = written_rank(module, node)
    name = unwrapped(value) if value is not None else None
    return (value, name) if value is not None and isinstance(name, ast.Name) else None


def written_rank(module: Module, node: ast.AST) -> ast.expr | None:
    """The value ``node`` writes into the environment as ``RANK`` (``os.environ["RANK"] = str(rank)``,
    ``os.environ.update({"RANK": str(rank)})``, ``os.environ.update(RANK=f"{rank}")``), or None."""
    if isinstance(node, ast.Assign):
        return next((node.value for t in node.targets if isinstance(t, ast.Subscript) and _environ(module, t.value)
                     and isinstance(t.slice, ast.Constant) and t.slice.value == "RANK"), None)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update" and (
            _environ(module, node.func.value)):
        entries: list[tuple[object, ast.expr]] = [(k.arg, k.value) for k in node.keywords if k.arg]
        if node.args and isinstance(node.args[0], ast.Dict):
            entries += [(k.value, v) for k, v in zip(node.args[0].keys, node.args[0].values, strict=True)
                        if isinstance(k, ast.Constant)]
        return next((v for k, v in entries if k == "RANK"), None)
    return None


def _environ(module: Module, expr: ast.expr) -> bool:
    return module.qualname(expr) == "os.environ"


def unwrapped(value: ast.expr) -> ast.expr:
    """``rank`` in ``str(rank)``, ``f"{rank}"`` or ``rank`` itself: what a string written into the environment
    holds."""
    if isinstance(value, ast.Call) and last_name(value.func) == "str" and len(value.args) == 1:
        return value.args[0]
    if isinstance(value, ast.JoinedStr) and len(value.values) == 1 and isinstance(value.values[0], ast.FormattedValue):
        return value.values[0].value
    return value
