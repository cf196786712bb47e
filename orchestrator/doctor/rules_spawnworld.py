"""DDP008, a spawner's world of one node: the function a spawn of the file starts (``mp.spawn(worker,
nprocs=ngpus, args=(ngpus, args))``) joins a group whose ``world_size`` is one node's process count, with no node
count in it: ``torch.cuda.device_count()``, or the very value the spawn starts that many processes by (``--gpus``,
``nprocs=cfg["world_size"]``), followed through names, the spawn's ``args``, the file's calls and a dict's
constant key (``cfg = {"world_size": args.gpus}``; ``world_size=cfg["world_size"]``).

Started once per node (the ``per-node`` style) the script works on one node only: with its ranks offset by a node
index (``rank = args.node_rank * ngpus + gpu``) the second node's ranks are past the world and
``init_process_group`` fails or waits; a warning here (on one node it trains), an error across nodes
(``feasibility.across_nodes``, by the finding's mark). Where the rank is the spawn index itself, DDP016 says so
(``rules_spawn.check_index_as_rank``) and this stays silent: one finding for one defect. A world with any arithmetic,
or read from the environment (``WORLD_SIZE``: orch's per-node task's is every node's processes), is not one node's.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.rules_nodes import bound
from orchestrator.doctor.rules_rendezvous_computed import DEVICE_COUNT
from orchestrator.doctor.rules_spawn import installed_copy
from orchestrator.launchstyles.spawnrank import index_as_rank
from orchestrator.launchstyles.spawns import spawns
from orchestrator.source.analysis import INIT, spawn_target
from orchestrator.source.kwargs import argument, dict_entry
from orchestrator.source.names import dotted, last_name

ONE_NODE_WORLD = "a world of one node's processes"  # the mark feasibility reads
_DEPTH = 6
_SEE_THROUGH = frozenset({"int", "min", "max"})  # int(n), min(n, device_count()): still one node's count
_FIX = ("world_size = int(os.environ['WORLD_SIZE']) (orch gives a per-node task WORLD_SIZE = nodes x processes per "
        "node), with rank = int(os.environ['NODE_RANK']) * nprocs + index")


def check_one_node_world(a: Analysis) -> Iterator[Finding]:
    """DDP008 at each ``init_process_group`` a spawn of the file starts whose world is one node's processes."""
    seen: set[int] = set()
    for spawn in spawns(a):
        if spawn.strategy is not None or installed_copy(a, spawn.node) or index_as_rank(a, spawn.node) is not None:
            continue
        target = spawn_target(spawn.node)
        function = a.module.functions.get(target.id) if isinstance(target, ast.Name) else None
        count = _count(spawn.node)
        init = a.flow.reaches(function, INIT) if function is not None and count is not None else None
        size = argument(init, "world_size", 3) if init is not None else None
        if init is None or size is None or count is None or id(init) in seen:
            continue
        counted = {ast.dump(leaf) for leaf in _leaves(a, count, 0)}
        leaves = _leaves(a, size, 0)
        if not leaves or not all(_device_count(a, leaf) or ast.dump(leaf) in counted for leaf in leaves):
            continue
        seen.add(id(init))
        yield replace(a.finding(
            "DDP008", init, f"world_size={ast.unparse(size)} is one node's process count ({ast.unparse(leaves[0])}, "
            f"the processes {spawn.call} at line {spawn.line} starts), with no node count: started once per node, "
            "the other nodes' ranks are past that world and init_process_group fails or waits; it trains on one "
            "node only", confidence="likely", marks=frozenset({ONE_NODE_WORLD}), at=size,
            fact=f"the world size traced to {', '.join(sorted({ast.unparse(leaf) for leaf in leaves}))}"), fix=_FIX)


def _count(spawn: ast.Call) -> ast.expr | None:
    """How many processes the spawn starts (``nprocs=``, a spawn's third argument)."""
    return argument(spawn, "nprocs", 2)


def _device_count(a: Analysis, leaf: ast.expr) -> bool:
    return isinstance(leaf, ast.Call) and a.module.qualname(leaf.func) in DEVICE_COUNT


def _leaves(a: Analysis, expr: ast.expr, depth: int) -> list[ast.expr]:
    """The values ``expr`` ends at: names to what they hold (a parameter to what the file's calls and spawns pass),
    ``args.x`` to what the file assigns it (else itself), ``d["key"]`` to the key's value in the dict ``d`` holds,
    ``int(n)``/``min(n, m)`` to their arguments; anything else is a value of its own."""
    if depth > _DEPTH:
        return [expr]
    if isinstance(expr, ast.Name):
        found, value = a.module.resolve(expr.id, expr)
        values = [value] if value is not None else bound(a, expr) if found else []
        return [leaf for v in values for leaf in _leaves(a, v, depth + 1)] if values else [expr]
    if isinstance(expr, ast.Attribute) and "." in (key := dotted(expr) or ""):
        values = a.module.values_anywhere(key)
        return [leaf for v in values for leaf in _leaves(a, v, depth + 1)] if values else [expr]
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, str):
        picked = [value for held in _leaves(a, expr.value, depth + 1)
                  if (value := dict_entry(held, expr.slice.value)) is not None]
        return [leaf for v in picked for leaf in _leaves(a, v, depth + 1)] if picked else [expr]
    if isinstance(expr, ast.Call) and last_name(expr.func) in _SEE_THROUGH and expr.args and not expr.keywords:
        return [leaf for arg in expr.args for leaf in _leaves(a, arg, depth + 1)]
    return [expr]
