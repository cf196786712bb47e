"""DDP014: a script that starts its own ranks (``mp.spawn``, ``start_processes``, a ``multiprocessing.Process``
that runs the training) inside a rank that a launcher (orch, torchrun) already started, or a framework strategy
that does (``Trainer(strategy="ddp_spawn")``). Which spawns count (no launcher check keeps them from running, the
started function trains) is the launch styles' fact (``orchestrator.launchstyles.spawns``): a ``per-node``
script runs its spawn as written, and the gate drops this finding then.

A spawn asked for by a count whose default is 1 (``if args.world_size > 1: mp.spawn(...)`` with ``--world-size``
declared ``default=1``, a parameter ``num_gpus=1``) is only possible: with the count left at its default no process
is spawned, and a user who passes it runs the script per node, as written.

DDP016 (``check_index_as_rank``): the function such a spawn starts hands its spawn index, unchanged, to
``init_process_group(rank=...)`` (the launch styles' fact, ``orchestrator.launchstyles.spawnrank``). Started once
per node (``per-node``), every node's processes claim ranks 0..nprocs-1 of one world: the script works on one node
only. A warning here (on one node it trains); across nodes ``feasibility.across_nodes`` makes it the error.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding, make_finding
from orchestrator.launchstyles.installed import SPAWNERS
from orchestrator.launchstyles.spawnrank import index_as_rank
from orchestrator.launchstyles.spawns import spawns
from orchestrator.source.exprnames import FunctionNode, dotted

_DEPTH = 3
INDEX_RANK_TITLE = ("a spawn index passed as the global rank, with no node's offset: on more than one node every "
                    "node's processes claim ranks 0..nprocs-1")
# DDP016's fix where the rank is a spawn index (launchstyle.py's across-node finding says the same)
INDEX_RANK_FIX = ("add the node's offset: rank = int(os.environ['NODE_RANK']) * nprocs + index, world size "
                  "int(os.environ['WORLD_SIZE']) (orch gives a per-node task NODE_RANK, NPROC_PER_NODE and WORLD_SIZE)")


def check_self_spawn(a: Analysis) -> Iterator[Finding]:
    """DDP014 at each spawn of training processes that no launcher check keeps from running."""
    for spawn in spawns(a):
        if installed_copy(a, spawn.node):
            continue
        if spawn.strategy is None:
            yield a.finding("DDP014", spawn.node, spawn.call,
                            confidence="possible" if _asked_by_count(a, spawn.node) else None)
        else:
            yield a.finding("DDP014", spawn.node, f"{spawn.call}(strategy={spawn.strategy!r}): Lightning starts its "
                                                  "own ranks in every launched rank; use strategy=\"ddp\"")


def check_index_as_rank(a: Analysis) -> Iterator[Finding]:
    """DDP016 at each ``init_process_group`` (in this file or a project module) whose rank is the index of a spawn
    of ``a``'s file, with no node's offset: one finding per call, however many spawns reach it."""
    seen: set[tuple[str, int]] = set()
    for spawn in spawns(a):
        if spawn.strategy is not None or installed_copy(a, spawn.node):
            continue
        found = index_as_rank(a, spawn.node)
        if found is None or (found.file, found.line) in seen:
            continue
        seen.add((found.file, found.line))
        code = " ".join(ast.unparse(found.node).split())
        code = code if len(code) <= 70 else code[:67] + "..."
        where = f"{Path(spawn.file).name}:{spawn.line}"
        start = getattr(found.node, "lineno", found.line)
        yield replace(make_finding(
            "DDP016", found.file, found.line, f"{found.given}: the index of {spawn.call} at {where}",
            title=INDEX_RANK_TITLE, end_line=getattr(found.node, "end_lineno", None) or start, start_line=start,
            evidence=f"line {start}: `{code}`; the spawn at {where} passes its index as the rank, with no "
                     "node's offset: one node only"), fix=INDEX_RANK_FIX)


def installed_copy(a: Analysis, node: ast.AST) -> bool:
    """``node`` is in the project's copy of a well-known installed spawner (detectron2's ``engine/launch.py``'s
    ``launch``, read where its package folder was shipped with the script): the spawner's own spawn, made only when
    asked for more than one process (``launchstyles/installed.py``), not the script's."""
    function = a.module.function_of(node)
    path = "/" + Path(a.filename).with_suffix("").as_posix()
    return function is not None and any(
        path.endswith("/" + module.replace(".", "/")) and function.name == name
        for module, _, name in (q.rpartition(".") for q in SPAWNERS))


def _asked_by_count(a: Analysis, node: ast.AST) -> bool:
    """An ``if N > 1:`` (``N >= 2``) around ``node``, in its function, whose N is a count the user passes."""
    child: ast.AST = node
    current = a.module.parents.get(node)
    while current is not None and not isinstance(current, FunctionNode | ast.ClassDef):
        if isinstance(current, ast.If) and child in current.body and _more_than_one(current.test) \
                and _user_count(a, current.test.left, 0):  # type: ignore[attr-defined]
            return True
        child, current = current, a.module.parents.get(current)
    return False


def _more_than_one(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.comparators[0], ast.Constant)):
        return False
    bound, op = test.comparators[0].value, test.ops[0]
    return (isinstance(op, ast.Gt) and bound == 1) or (isinstance(op, ast.GtE) and bound == 2)


def _user_count(a: Analysis, expr: ast.expr, depth: int) -> bool:
    """``expr`` is a count whose default is 1: a flag the file declares with ``default=1`` (``args.world_size``)
    or a parameter ``num_gpus=1``, directly or through a name; not a value the code computes
    (``torch.cuda.device_count()``) nor a config's (``cfg.NUM_GPUS``, often 8)."""
    if depth > _DEPTH:
        return False
    if isinstance(expr, ast.Attribute):
        key = dotted(expr)
        return key is not None and "." in key and not a.module.values_anywhere(key) and _flag_default_one(a, expr.attr)
    if isinstance(expr, ast.Name):
        found, value = a.module.resolve(expr.id, expr)
        function = a.module.function_of(expr)
        if value is None:
            return found and function is not None and _parameter_default_one(function, expr.id)
        return _user_count(a, value, depth + 1)
    return False


def _one(value: ast.expr | None) -> bool:
    return isinstance(value, ast.Constant) and value.value == 1 and not isinstance(value.value, bool)


def _flag_default_one(a: Analysis, attr: str) -> bool:
    """``parser.add_argument("--world-size", type=int, default=1)`` (or ``dest="world_size"``) in the file."""
    for node in a.module.nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        keywords = {k.arg: k.value for k in node.keywords}
        dest = keywords.get("dest")
        names = {dest.value} if isinstance(dest, ast.Constant) else {
            o.value.lstrip("-").replace("-", "_") for o in node.args
            if isinstance(o, ast.Constant) and isinstance(o.value, str)}
        if attr in names:
            return _one(keywords.get("default"))
    return False


def _parameter_default_one(function: FunctionNode, name: str) -> bool:
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults = dict(zip([p.arg for p in positional[len(positional) - len(args.defaults):]], args.defaults,
                        strict=True))
    defaults.update((p.arg, d) for p, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None)
    return _one(defaults.get(name))
