"""DDP021 (a rendezvous only this machine can reach) and DDP022 (a check that the run fits on one node).

Both are warnings as read: on one node the script works. For a layout of more than one node the gate
(``orchestrator.doctor.feasibility``) makes them errors: ``orch submit --nodes 2`` refuses the script before
it waits in the queue.

- DDP021: ``init_process_group(init_method="file://...")`` whose file lies in a temporary or machine-local
  folder (``tempfile.mkdtemp()``, ``tempfile.gettempdir()``, ``TemporaryDirectory()``, ``/tmp``,
  ``/dev/shm``), followed through names, this file's calls and ``mp.spawn``'s ``args``: the other nodes
  never see that file (not under a test of the operating system: Windows' FileStore).
- DDP021 also: a file one rank writes there and every rank reads (the DDP tutorial's initial weights: ``if rank ==
  0: torch.save(model.state_dict(), CHECKPOINT_PATH)``, a barrier, ``model.load_state_dict(torch.load(
  CHECKPOINT_PATH))`` with the path under ``tempfile.gettempdir()``): on another node the file is not there (or is an
  old run's).
- DDP022: ``assert world_size == torch.cuda.device_count()`` (the world is one node's GPUs), ``assert nnodes
  == 1``, ``assert local_rank == dist.get_rank()`` (the local rank is the global one on the first node only), and
  the same as a test that raises or exits (``if nnodes > 1: raise ...``). A world size that is
  itself the GPU count (``world_size = torch.cuda.device_count()``) is not a check: not reported.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import replace

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.source.analysis import INIT, SPAWNERS
from orchestrator.source.branches import PLATFORM, off_linux_side
from orchestrator.source.exprnames import FunctionNode, dotted, last_name
from orchestrator.source.kwargs import argument
from orchestrator.source.ranks import NODES_ENV, WORLD_ENV
from orchestrator.source.walk import walk

_DEPTH = 4
HANDOFF_MARK = "a file handed between ranks"  # DDP021's mark for a file one rank writes and the others read
_SAVES = frozenset({"torch.save"})
_LOADS = frozenset({"torch.load"})
_HANDOFF_FIX = ("hand it over without the node's disk: DDP already copies rank 0's parameters to every rank when it "
                "wraps the model (drop the save and the load), or dist.broadcast_object_list; else a path on a file "
                "system every node mounts")
_TEMP_CALLS = frozenset({"tempfile.mkdtemp", "tempfile.gettempdir", "tempfile.TemporaryDirectory",
                         "tempfile.NamedTemporaryFile", "tempfile.mkstemp", "tempfile.mktemp"})
_LOCAL_DIRS = re.compile(r"^(file://)?/(tmp|dev/shm|var/tmp)(/|$)")
_NODE_COUNT = re.compile(r"^(n_?nodes|num_?nodes|nb_?nodes|node_?count|number_of_nodes|world_nodes)$", re.IGNORECASE)
_WORLD_CALLS = frozenset({"torch.distributed.get_world_size"})
_DEVICE_COUNT = frozenset({"torch.cuda.device_count"})
# (kind of the left side, operator, right side) that *asserts* one node; a test that raises asserts the negation
_REQUIRES: dict[str, dict[type[ast.cmpop], str]] = {
    "nodes": {ast.Eq: "1", ast.LtE: "1", ast.Lt: "2"},
    "world": {ast.Eq: "gpus", ast.LtE: "gpus"},
}
_FORBIDS: dict[str, dict[type[ast.cmpop], str]] = {
    "nodes": {ast.Gt: "1", ast.NotEq: "1", ast.GtE: "2"},
    "world": {ast.Gt: "gpus", ast.NotEq: "gpus"},
}
_FLIPPED: dict[type[ast.cmpop], type[ast.cmpop]] = {ast.Eq: ast.Eq, ast.NotEq: ast.NotEq, ast.Lt: ast.Gt,
                                                     ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}


# -- where a value comes from ---------------------------------------------------------------------------

def origins(a: Analysis, expr: ast.expr, depth: int = 0) -> list[ast.expr]:
    """``expr`` and the expressions its names hold: their assignments, what this file's calls (and
    ``mp.spawn(fn, args=(...))``) pass for a parameter, the ``with ... as name`` that binds one."""
    out = [expr]
    if depth > _DEPTH:
        return out
    for node in walk(expr):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            found, value = a.module.resolve(node.id, node)
            values = [value] if value is not None else bound(a, node) if found else []
        elif isinstance(node, ast.Attribute) and "." in (dotted(node) or ""):
            values = a.module.values_anywhere(dotted(node) or "")
        else:
            continue
        for v in values:
            if v is not expr:
                out += origins(a, v, depth + 1)
    return out


def bound(a: Analysis, name: ast.Name) -> list[ast.expr]:
    """A parameter's arguments (this file's calls, a spawn's ``args``) or the ``with`` item that binds it."""
    function = a.module.function_of(name)
    found: list[ast.expr] = []
    if function is not None:
        found += a.module.argument_for(function, name.id) + _spawn_args(a, function, name.id)
    scope = function if function is not None else a.module.tree
    found += [item.context_expr for node in walk(scope) if isinstance(node, ast.With | ast.AsyncWith)
              for item in node.items if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == name.id]
    return found


def _spawn_args(a: Analysis, function: FunctionNode, name: str) -> list[ast.expr]:
    """What ``mp.spawn(function, args=(x, y))`` passes for ``name`` (the spawn passes the index first)."""
    params = [p.arg for p in (*function.args.posonlyargs, *function.args.args)]
    if name not in params or params.index(name) == 0:
        return []
    index = params.index(name) - 1
    found: list[ast.expr] = []
    for node in a.module.calls_to(SPAWNERS):
        if not (node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == function.name):
            continue
        args = next((k.value for k in node.keywords if k.arg == "args"), node.args[1] if len(node.args) > 1 else None)
        if isinstance(args, ast.Tuple | ast.List) and index < len(args.elts):
            found.append(args.elts[index])
    return found


# -- DDP021 ---------------------------------------------------------------------------------------------

def check_local_rendezvous(a: Analysis) -> Iterator[Finding]:
    """DDP021 at each ``init_process_group`` that meets through a file in a temporary or local folder."""
    for site in a.sites(INIT):
        if _platform_branch(a, site.call):
            continue  # if sys.platform == "win32": a FileStore where Windows has no other; not a cluster's path
        method = next((k.value for k in site.call.keywords if k.arg == "init_method"),
                      site.call.args[1] if len(site.call.args) > 1 else None)
        if method is None:
            continue
        found = origins(a, method)
        nodes = [n for expr in found for n in walk(expr)]
        if not any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("file://")
                   for n in nodes):
            continue
        where = next((_local_place(a, n) for n in nodes if _local_place(a, n)), None)
        if where is not None:
            yield a.finding("DDP021", site.call, f"init_method={ast.unparse(method)[:50]}: a file in {where}")


def check_local_handoff(a: Analysis) -> Iterator[Finding]:
    """DDP021 at each ``torch.load`` every rank runs of a path that a ``torch.save`` on some ranks only (under a rank
    test) writes in a temporary or local folder."""
    if not a.distributed:
        return
    saves = [(site, path) for site in a.sites(_SAVES) if a.flow.guarded(site)
             and (path := argument(site.call, "f", 1)) is not None]
    for load in a.sites(_LOADS):
        path = argument(load.call, "f", 0)
        if path is None or a.flow.guarded(load) or a.flow.never_runs(load):
            continue
        written = next((site for site, saved in saves if ast.dump(saved) == ast.dump(path)
                        and site.function is load.function and site.call.lineno < load.call.lineno), None)
        where = next((w for e in origins(a, path) for x in walk(e) if (w := _local_place(a, x))), None) if (
            written is not None) else None
        if written is not None and where is not None:
            yield replace(a.finding(
                "DDP021", load.call, f"torch.load({ast.unparse(path)[:40]}) on every rank reads the file line "
                f"{written.call.lineno} writes on some ranks only, in {where}: each node has its own",
                title="a file one rank writes in a temporary or local folder and every rank reads",
                marks=frozenset({HANDOFF_MARK})), fix=_HANDOFF_FIX)


def _platform_branch(a: Analysis, node: ast.AST) -> bool:
    """``node`` runs on the side of an ``if`` testing the operating system that a Linux cluster node never takes
    (``if os.name == "nt":``; StyleGAN-XL's Linux ``file://`` in the ``else`` is still read), or under such a test
    whose sides are not told apart."""
    child, current = node, a.module.parents.get(node)
    while current is not None:
        if isinstance(current, ast.If) and child is not current.test and any(
                isinstance(n, ast.Attribute) and a.module.qualname(n) in PLATFORM for n in walk(current.test)):
            off = off_linux_side(current.test, a.module.qualname)
            if off is None or off == (child in current.body):
                return True
        child, current = current, a.module.parents.get(current)
    return False


def _local_place(a: Analysis, node: ast.AST) -> str | None:
    if isinstance(node, ast.Call) and a.module.qualname(node.func) in _TEMP_CALLS:
        return f"{a.module.qualname(node.func)}()"
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and _LOCAL_DIRS.match(node.value):
        return repr(node.value)[:40]
    return None


# -- DDP022 ---------------------------------------------------------------------------------------------

def check_node_count(a: Analysis) -> Iterator[Finding]:
    """DDP022 at each ``assert`` (or ``if ...: raise``/``exit``) that holds only on one node."""
    for node in a.module.nodes:
        if isinstance(node, ast.Assert):
            test, table = node.test, _REQUIRES
        elif isinstance(node, ast.If) and any(_stops(stmt) for stmt in node.body):
            test, table = node.test, _FORBIDS
        else:
            continue
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and (
                _one_node(a, test, table) or _local_is_global(a, test, table is _REQUIRES)):
            yield a.finding("DDP022", node, ast.unparse(test)[:60])


def _local_is_global(a: Analysis, test: ast.Compare, asserted: bool) -> bool:
    """``assert args.local_rank == dist.get_rank()`` (or ``if local_rank != rank: raise``): the local rank is the
    global one only on the first node."""
    wanted = ast.Eq if asserted else ast.NotEq
    kinds = {a.ranks.source(test.left), a.ranks.source(test.comparators[0])}
    return isinstance(test.ops[0], wanted) and kinds == {"local", "global"}


def _stops(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Raise):
        return True
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and last_name(stmt.value.func) in (
        "exit", "_exit")


def _one_node(a: Analysis, test: ast.Compare, table: dict[str, dict[type[ast.cmpop], str]]) -> bool:
    left, op, right = test.left, type(test.ops[0]), test.comparators[0]
    flipped = _FLIPPED.get(op)
    if flipped is None:  # is, in: not a count
        return False
    for count, other, how in ((left, right, op), (right, left, flipped)):
        kind = _count_kind(a, count)
        wanted = table.get(kind or "", {}).get(how)
        if wanted is not None and _matches(a, other, wanted):
            return True
    return False


def _count_kind(a: Analysis, expr: ast.expr) -> str | None:
    """``nodes`` for a node count, ``world`` for a world size read from the launcher or named so (not one
    that is itself the GPU count)."""
    found = origins(a, expr)
    walked = [n for e in found for n in walk(e)]
    envs = {a.ranks.env_key(n) for n in walked if isinstance(n, ast.expr)}
    if envs & NODES_ENV or _NODE_COUNT.match(last_name(expr) or ""):
        return "nodes"
    if _accelerator_world(a, expr):
        return "world"  # whatever the Accelerator was made with (its kwargs may count the local GPUs)
    if any(isinstance(n, ast.Call) and a.module.qualname(n.func) in _DEVICE_COUNT for n in walked):
        return None  # world_size = torch.cuda.device_count(): equal by construction
    if envs & WORLD_ENV or any(isinstance(n, ast.Call) and a.module.qualname(n.func) in _WORLD_CALLS
                                for n in walked):
        return "world"
    name = (last_name(expr) or "").lower()
    return "world" if "world" in name and "local" not in name and "LOCAL_WORLD_SIZE" not in envs else None


def _accelerator_world(a: Analysis, expr: ast.expr) -> bool:
    """``accelerator.num_processes``: Accelerate's count of every process of the run (the world), on an object bound to
    ``Accelerator(...)`` (or named ``accelerator``)."""
    if not (isinstance(expr, ast.Attribute) and expr.attr == "num_processes" and isinstance(expr.value, ast.Name)):
        return False
    _, value = a.module.resolve(expr.value.id, expr.value)
    made = isinstance(value, ast.Call) and (a.module.qualname(value.func) or "").endswith("Accelerator")
    return made or expr.value.id == "accelerator"


def _matches(a: Analysis, expr: ast.expr, wanted: str) -> bool:
    if wanted == "gpus":  # torch.cuda.device_count(), or len() of this machine's CUDA_VISIBLE_DEVICES list
        walked = [n for e in origins(a, expr) for n in walk(e)]
        return any(isinstance(n, ast.Call) and a.module.qualname(n.func) in _DEVICE_COUNT for n in walked) or (
            any(isinstance(n, ast.Call) and last_name(n.func) == "len" for n in walked)
            and any(isinstance(n, ast.expr) and a.ranks.env_key(n) == "CUDA_VISIBLE_DEVICES" for n in walked))
    return isinstance(expr, ast.Constant) and expr.value == int(wanted) and not isinstance(expr.value, bool)
