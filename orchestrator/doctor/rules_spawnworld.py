"""DDP008, a spawner's world of one node: the function a spawn of the file starts (``mp.spawn(worker,
nprocs=ngpus, args=(ngpus, args))``) joins a group whose ``world_size`` is one node's process count, with no node
count in it: ``torch.cuda.device_count()``, or the very value the spawn starts that many processes by (``--gpus``,
``nprocs=cfg["world_size"]``), followed through names, the spawn's ``args``, the file's calls and a dict's
constant key (``cfg = {"world_size": args.gpus}``; ``world_size=cfg["world_size"]``).

Started once per node (the ``per-node`` style) the script works on one node only: with its ranks offset by a node
index (``rank = args.node_rank * ngpus + gpu``) the second node's ranks are past the world and
``init_process_group`` fails or waits; a warning here (on one node it trains), an error across nodes
(``feasibility.across_nodes``, by the finding's mark). Where the rank is the spawn index itself DDP016 names the
rank (``rules_spawn.check_index_as_rank``) and this names the world: two lines to fix, each a world of its own
per node until both are. A world with any arithmetic,
or read from the environment (``WORLD_SIZE``: orch's per-node task's is every node's processes), is not one node's;
a product by a node count of 1 written in (``args.nodes = 1``; ``args.gpus * args.nodes``) is the other factor.

DDP016, a node offset written in: the worker's rank is its spawn index plus an offset whose every value is an int
the code writes (``args.nr = 0``; ``rank = args.nr * args.gpus + gpu``): every node computes the first node's ranks.
A flag's default is the user's to pass per node (the gate's placeholder warning), and is not reported here.
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
from orchestrator.launchstyles.spawns import Spawn, spawns
from orchestrator.source.analysis import INIT, spawn_target
from orchestrator.source.assignments import assignment_before
from orchestrator.source.exprnames import FunctionNode, dotted, last_name
from orchestrator.source.kwargs import argument, dict_entry, subscript_key

ONE_NODE_WORLD = "a world of one node's processes"  # the mark feasibility reads
_DEPTH = 6
_SEE_THROUGH = frozenset({"int", "min", "max"})  # int(n), min(n, device_count()): still one node's count
_OFFSET_TITLE = ("a spawned worker's rank offset by a node index written in the code: on more than one node every "
                 "node's processes claim the first node's ranks")
_OFFSET_FIX = ("take the node's offset from the environment: rank = int(os.environ['NODE_RANK']) * nprocs + index "
               "(orch gives a per-node task NODE_RANK, NPROC_PER_NODE and WORLD_SIZE)")
_OTHERS = {  # by whether the ranks add a node's offset
    True: "the other nodes' ranks are past that world and init_process_group fails or waits",
    False: "every node's processes form a world of their own (the spawn index is the rank: DDP016)",
}
_FIX = ("world_size = int(os.environ['WORLD_SIZE']) (orch gives a per-node task WORLD_SIZE = nodes x processes per "
        "node), with rank = int(os.environ['NODE_RANK']) * nprocs + index")


def check_one_node_world(a: Analysis) -> Iterator[Finding]:
    """DDP008 at each ``init_process_group`` a spawn of the file starts whose world is one node's processes (at the
    statement that calls for the one value it traces to: ``world_size = torch.cuda.device_count()``,
    ``cfg["world_size"] = get_world_size()``)."""
    seen: set[int] = set()
    for spawn, _, init in _workers(a, index_rank=True):
        count = _count(spawn.node)
        size = argument(init, "world_size", 3)
        if size is None or count is None or id(init) in seen:
            continue
        counted = {ast.dump(leaf) for leaf in _leaves(a, count, 0)}
        overwrite = _set_before(a, spawn.node, size)
        leaves = _leaves(a, overwrite.value if overwrite is not None else size, 0)
        if not leaves or not all(_device_count(a, leaf) or ast.dump(leaf) in counted for leaf in leaves):
            continue
        seen.add(id(init))
        held = overwrite or (a.statement_of(leaves[0]) if len(leaves) == 1 and isinstance(leaves[0], ast.Call)
                             else None)
        yield replace(a.finding(
            "DDP008", held or init,
            f"world_size={ast.unparse(size)} is one node's process count ({ast.unparse(leaves[0])}, "
            f"the processes {spawn.call} at line {spawn.line} starts), with no node count: started once per node, "
            f"{_OTHERS[index_as_rank(a, spawn.node) is None]}; it trains on one node only", confidence="likely",
            marks=frozenset({ONE_NODE_WORLD}), at=None if held else size,
            fact=f"the world size of the init_process_group at line {init.lineno} traced to "
                 f"{', '.join(sorted({ast.unparse(leaf) for leaf in leaves}))}"), fix=_FIX)


def _workers(a: Analysis, *, index_rank: bool = False) -> Iterator[tuple[Spawn, FunctionNode, ast.Call]]:
    """Each spawn of the file's own function (not a framework's strategy, not a spawner's installed copy; one whose
    index is the rank itself only with ``index_rank``), that function, and the ``init_process_group`` it reaches."""
    for spawn in spawns(a):
        if spawn.strategy is not None or installed_copy(a, spawn.node) or (
                not index_rank and index_as_rank(a, spawn.node) is not None):
            continue
        target = spawn_target(spawn.node)
        function = a.module.named_function(target.id) if isinstance(target, ast.Name) else None
        init = a.flow.reaches(function, INIT) if function is not None else None
        if function is not None and init is not None:
            yield spawn, function, init


def _set_before(a: Analysis, spawn: ast.Call, size: ast.expr) -> ast.Assign | None:
    """The assignment that sets the attribute the worker's world size reads (``args.world_size``) last before the
    spawn, in the blocks around it (``args.world_size = ngpus_per_node`` after ``if ...: args.world_size =
    int(os.environ["WORLD_SIZE"])``): what the spawned workers are handed, whatever the file assigns elsewhere.
    None where a statement in between may assign it too."""
    key = dotted(size) if isinstance(size, ast.Attribute) else None
    earlier = assignment_before(key, spawn, a.module.parents) if key is not None else None
    return earlier if isinstance(earlier, ast.Assign) else None


def _count(spawn: ast.Call) -> ast.expr | None:
    """How many processes the spawn starts (``nprocs=``, a spawn's third argument)."""
    return argument(spawn, "nprocs", 2)


def _device_count(a: Analysis, leaf: ast.expr) -> bool:
    return isinstance(leaf, ast.Call) and a.module.qualname(leaf.func) in DEVICE_COUNT


def _leaves(a: Analysis, expr: ast.expr, depth: int) -> list[ast.expr]:
    """The values ``expr`` ends at: names to what they hold (a parameter to what the file's calls and spawns pass),
    ``args.x`` to what the file assigns it (else itself), ``d["key"]`` to the key's value in the dict ``d`` holds
    (else to what the file assigns ``d["key"]``),
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
        picked = picked or a.module.values_anywhere(subscript_key(expr) or "")  # cfg["world_size"] = n
        return [leaf for v in picked for leaf in _leaves(a, v, depth + 1)] if picked else [expr]
    if isinstance(expr, ast.Call) and last_name(expr.func) in _SEE_THROUGH and expr.args and not expr.keywords:
        return [leaf for arg in expr.args for leaf in _leaves(a, arg, depth + 1)]
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):  # gpus * nodes, nodes = 1 written in
        left, right = _leaves(a, expr.left, depth + 1), _leaves(a, expr.right, depth + 1)
        return left if _ones(right) else right if _ones(left) else [expr]
    return [expr]


def _ones(leaves: list[ast.expr]) -> bool:
    """Every value is the int 1 written in: a node count of one that no flag or variable can change."""
    return bool(leaves) and all(isinstance(x, ast.Constant) and x.value == 1 and type(x.value) is int
                                for x in leaves)


def check_fixed_node_offset(a: Analysis) -> Iterator[Finding]:
    """DDP016 where a spawned worker's rank is its spawn index plus a node offset written in the code
    (``args.nr = 0``; ``args.rank = args.nr * args.gpus + gpu``): every node computes the same offset, so started
    once per node every node's processes claim the first node's ranks. A flag's default is not this (the user
    passes ``-nr {node_rank}``: the gate's placeholder warning), nor an offset read from the environment."""
    seen: set[int] = set()
    for spawn, function, init in _workers(a):
        params = [p.arg for p in (*function.args.posonlyargs, *function.args.args)]
        rank = argument(init, "rank", 4)
        built = _sum(a, rank, 0) if rank is not None and params else None
        if rank is None or built is None or id(built) in seen:
            continue
        for index, offset in ((built.right, built.left), (built.left, built.right)):
            leaves = _leaves(a, index, 0)
            fixed = _written_ints(a, offset, 0)
            if not (len(leaves) == 1 and isinstance(leaves[0], ast.Name) and leaves[0].id == params[0]
                    and a.module.function_of(leaves[0]) is function) or not fixed:
                continue
            seen.add(id(built))
            values = ", ".join(ast.unparse(x) for x in fixed)
            yield replace(a.finding(
                "DDP016", built, f"{_named(rank, built)}: the node offset {ast.unparse(offset)} is written in "
                f"({values}), the same on every node: started once per node, every node's processes claim the "
                "first node's ranks", title=_OFFSET_TITLE, confidence="likely", at=offset,
                fact=f"the spawn at line {spawn.line} passes the index {params[0]}; the offset traced to {values}"),
                fix=_OFFSET_FIX)
            break


def _written_ints(a: Analysis, expr: ast.expr, depth: int) -> list[ast.Constant]:
    """The ints ``expr`` is made of, through names and arithmetic, when every value it ends at is one written in
    the code (``args.nr * args.gpus`` with ``args.nr = 0``, ``args.gpus = 8``); else none."""
    if depth > _DEPTH:
        return []
    if isinstance(expr, ast.BinOp):
        left, right = _written_ints(a, expr.left, depth + 1), _written_ints(a, expr.right, depth + 1)
        return [*left, *right] if left and right else []
    leaves = _leaves(a, expr, depth + 1)
    if leaves == [expr]:
        return [expr] if isinstance(expr, ast.Constant) and type(expr.value) is int else []
    found = [_written_ints(a, leaf, depth + 1) for leaf in leaves]
    return [x for ints in found for x in ints] if found and all(found) else []


def _named(rank: ast.expr, built: ast.BinOp) -> str:
    """``rank=args.rank``'s value as read: ``args.rank = args.nr * args.gpus + gpu``."""
    return f"rank={ast.unparse(built)}" if rank is built else f"{ast.unparse(rank)} = {ast.unparse(built)}"


def _sum(a: Analysis, expr: ast.expr, depth: int) -> ast.BinOp | None:
    """The one ``x + y`` that ``expr`` holds (through a name's value, ``args.rank``'s single assignment)."""
    if depth > _DEPTH:
        return None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return expr
    if isinstance(expr, ast.Name):
        _, value = a.module.resolve(expr.id, expr)
        return _sum(a, value, depth + 1) if value is not None else None
    if isinstance(expr, ast.Attribute) and "." in (key := dotted(expr) or ""):
        values = a.module.values_anywhere(key)
        return _sum(a, values[0], depth + 1) if len(values) == 1 else None
    return None
