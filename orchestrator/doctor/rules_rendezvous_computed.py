"""DDP008, the rendezvous computed wrong (``rules_rendezvous`` reports the values written in the code):

- a world size of nodes x GPUs (``int(os.environ["SLURM_NNODES"]) * torch.cuda.device_count()``), or one node's GPU
  count while the rank is the launcher's (global or local) one: the launcher's task count (``WORLD_SIZE``,
  ``SLURM_NTASKS``) is not read, so a job with fewer tasks per node than GPUs (or more than one node) waits for ranks
  that never come (named at the ``world_size=`` argument);
- ``os.environ["MASTER_PORT"]`` (or ``MASTER_ADDR``) set from another variable with a fixed fallback
  (``os.environ.get("PORT", 29500)``): unless that variable is set, the launcher's value is replaced by the constant;
- a ``tcp://`` rendezvous address whose port is drawn at random (``np.random.randint``, ``random.randint``, also in a
  helper ``get_port()``) when the script runs: processes started apart (one per node, one per task) draw their own
  ports and never meet;
- a rendezvous address, rank or world size read from a config file the script loads
  (``init_process_group(init_method=h.dist_config["dist_url"])`` with ``"dist_url": "tcp://localhost:54321"`` in the
  JSON file, ``source/configvalues.py``): likely (the user may pass another config), possible where the project's
  config files disagree.

Each value is followed through names, parameters and this file's calls (``rules_nodes.origins``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.layoutconfig import read_config
from orchestrator.doctor.rules_nodes import origins
from orchestrator.env.taskenv import is_loopback
from orchestrator.source.analysis import INIT
from orchestrator.source.exprnames import FunctionNode
from orchestrator.source.kwargs import argument
from orchestrator.source.passedvalues import passed_constants
from orchestrator.source.ranks import GLOBAL_ENV, LOCAL_ENV, NODES_ENV, WORLD_ENV
from orchestrator.source.walk import walk

CONFIG_LOOPBACK = "the config's rendezvous is this machine's loopback address"  # said, and the mark feasibility reads
LOOPBACK_MASTER = "MASTER_ADDR written as this machine's loopback"  # the mark launchstyle.answered reads

DEVICE_COUNT = frozenset({"torch.cuda.device_count"})
_RANDOM_DRAWS = frozenset({"random.randint", "random.randrange", "random.choice", "numpy.random.randint",
                           "numpy.random.choice", "np.random.randint", "np.random.choice"})
MASTER_KEYS = frozenset({"MASTER_PORT", "MASTER_ADDR"})
# the rank a launcher's variables give, by the kinds read (both: unknown)
_RANK_KINDS = {**{frozenset({key}): "global one" for key in GLOBAL_ENV},
               **{frozenset({key}): "node-local one (the global rank repeats on every node)" for key in LOCAL_ENV}}


def check_computed(a: Analysis) -> Iterator[Finding]:
    yield from _world_sizes(a)
    yield from _master_fallbacks(a)
    yield from _per_node_ports(a)
    yield from _random_ports(a)
    yield from _config_rendezvous(a)


# -- the world size -------------------------------------------------------------------------------------------

def _walked(a: Analysis, expr: ast.expr) -> list[ast.AST]:
    return [n for e in origins(a, expr) for n in walk(e)]


def _envs(a: Analysis, nodes: list[ast.AST]) -> set[str]:
    return {key for n in nodes if isinstance(n, ast.expr) and (key := a.ranks.env_key(n)) is not None}


def _counts_devices(a: Analysis, nodes: list[ast.AST]) -> bool:
    return any(isinstance(n, ast.Call) and a.module.qualname(n.func) in DEVICE_COUNT for n in nodes)


def _world_sizes(a: Analysis) -> Iterator[Finding]:
    for site in a.sites(INIT):
        size = argument(site.call, "world_size", 3)
        if size is None:
            continue
        walked = _walked(a, size)
        envs = _envs(a, walked)
        if envs & WORLD_ENV or not _counts_devices(a, walked):
            continue
        product = next((n for n in walked if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult)
                        and _envs(a, _walked(a, n)) & NODES_ENV and _counts_devices(a, _walked(a, n))), None)
        if product is not None:
            nodes = sorted(_envs(a, _walked(a, product)) & NODES_ENV)[0]
            yield a.finding("DDP008", _statement(a, product), f"world_size = {nodes} x torch.cuda.device_count(): "
                            "the GPUs of every node, not the launcher's task count (WORLD_SIZE, SLURM_NTASKS); a "
                            "job with fewer tasks per node than GPUs waits in init_process_group for ranks that "
                            "never come", confidence="likely")
            continue
        rank = argument(site.call, "rank", 4)
        kind = _RANK_KINDS.get(frozenset(_envs(a, _walked(a, rank)) & (GLOBAL_ENV | LOCAL_ENV))) if rank else None
        if kind is not None:
            yield a.finding("DDP008", site.call, f"world_size is this machine's torch.cuda.device_count() while the "
                            f"rank is the launcher's {kind}: on more than one node (or with fewer tasks than "
                            "GPUs) the ranks and the world disagree; read WORLD_SIZE (or SLURM_NTASKS)",
                            confidence="likely", at=size)


def _statement(a: Analysis, node: ast.AST) -> ast.AST:
    """The statement that holds ``node`` (the finding's line)."""
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        current = a.module.parents.get(current)
    return current if current is not None else node


# -- MASTER_PORT / MASTER_ADDR from another variable, with a constant fallback -----------------------------------

def _master_fallbacks(a: Analysis) -> Iterator[Finding]:
    for node in a.module.nodes:
        if not isinstance(node, ast.Assign):
            continue
        keys = {key for t in node.targets if (key := a.ranks.env_key(t)) in MASTER_KEYS}
        if not keys:
            continue
        key = sorted(keys)[0]
        found = next(((read, fallback) for expr in origins(a, node.value) for read in walk(expr)
                      if isinstance(read, ast.Call) and (fallback := _fixed_fallback(a, read, key)) is not None),
                     None)
        if found is not None:
            read, fallback = found
            other = a.ranks.env_key(read)
            yield a.finding("DDP008", node, f"os.environ[{key!r}] is ${other}, else the fixed {fallback}: the "
                            f"launcher's {key} is overwritten (two jobs on one node meet on one port); read "
                            f"{key} itself", confidence="likely")


# variables whose value is each node's (or each process's) own: a port made from one differs between the nodes
_PER_NODE_ENV = frozenset({"SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES", "SLURM_NODEID",
                           "SLURMD_NODENAME", "HOSTNAME"}) | LOCAL_ENV


def _per_node_ports(a: Analysis) -> Iterator[Finding]:
    """``os.environ["MASTER_PORT"] = str(12345 + int(min(gpu_ids)))`` with ``gpu_ids`` from ``SLURM_STEP_GPUS``
    (IDRIS's ``idr_torch.py``, run on import): the launcher's port is replaced by one each node computes from its own
    GPUs (or its name, its local rank): nodes given other GPUs look for the rendezvous on other ports."""
    for node in a.module.nodes:
        if not (isinstance(node, ast.Assign) and any(a.ranks.env_key(t) == "MASTER_PORT" for t in node.targets)):
            continue
        own = sorted(_envs(a, _walked(a, node.value)) & _PER_NODE_ENV)
        if own:
            yield a.finding("DDP008", node, f"os.environ['MASTER_PORT'] is computed from ${own[0]}, each node's own "
                            "value: the launcher's port is overwritten, and nodes given other GPUs (or another "
                            "name) look for the rendezvous on other ports; read MASTER_PORT as the launcher sets it",
                            confidence="likely")


def _fixed_fallback(a: Analysis, read: ast.Call, key: str) -> str | None:
    """``os.environ.get("PORT", 29500)`` (or a parameter whose default is 29500) read for ``key``: another
    variable than ``key`` with a constant fallback. Returns the constant."""
    other = a.ranks.env_key(read)
    if other is None or other == key or len(read.args) < 2:
        return None
    fallback = read.args[1]
    if isinstance(fallback, ast.Name):
        fallback = _parameter_default(a, fallback) or fallback
    if isinstance(fallback, ast.Constant) and isinstance(fallback.value, int | str) and str(fallback.value):
        return repr(fallback.value)
    return None


def _parameter_default(a: Analysis, name: ast.Name) -> ast.expr | None:
    """The default of parameter ``name`` when no call in this file passes it."""
    function = a.module.function_of(name)
    if function is None or a.module.argument_for(function, name.id):
        return None
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults = dict(zip([p.arg for p in positional[len(positional) - len(args.defaults):]], args.defaults,
                        strict=True))
    defaults.update({p.arg: d for p, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None})
    return defaults.get(name.id)


# -- a tcp:// address with a port drawn at random ----------------------------------------------------------------

def url_parts(expr: ast.expr) -> tuple[str, list[ast.expr]] | None:
    """(text, parts) of a ``tcp://`` URL: an f-string, ``"tcp://{}:{}".format(...)``, ``"tcp://%s:%d" % (...)`` or
    ``"tcp://host:" + str(port)``; None for anything else."""
    if isinstance(expr, ast.JoinedStr):
        text = "".join(str(v.value) for v in expr.values if isinstance(v, ast.Constant))
        parts = [v.value for v in expr.values if isinstance(v, ast.FormattedValue)]
    elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "format" and (
            isinstance(expr.func.value, ast.Constant) and isinstance(expr.func.value.value, str)):
        text, parts = expr.func.value.value, list(expr.args)
    elif isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod) and isinstance(expr.left, ast.Constant):
        text = str(expr.left.value)
        parts = list(expr.right.elts) if isinstance(expr.right, ast.Tuple) else [expr.right]
    elif isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        pieces: list[ast.expr] = []
        while isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            pieces.insert(0, expr.right)
            expr = expr.left
        pieces.insert(0, expr)
        text = "".join(str(p.value) for p in pieces if isinstance(p, ast.Constant))
        parts = [p for p in pieces if not isinstance(p, ast.Constant)]
    else:
        return None
    return (text, parts) if text.startswith("tcp://") and parts else None


def _random_ports(a: Analysis) -> Iterator[Finding]:
    if not (a.data_parallel or a.sites(INIT)):
        return
    for node in a.module.nodes:
        value = node.value if isinstance(node, ast.Assign) else None
        if isinstance(node, ast.Call) and a.module.qualname(node.func) in INIT:
            value = argument(node, "init_method", 1)
        parsed = url_parts(value) if value is not None else None
        if value is None or parsed is None:
            continue
        draw = next((d for part in parsed[1] if (d := _drawn(a, part)) is not None), None)
        if draw is not None:
            yield a.finding("DDP008", node, f"{ast.unparse(value)[:50]}: the port is {draw}, drawn by each "
                            "process that runs this line: processes started apart (one per node or task) draw "
                            "their own ports and never meet, and the launcher's MASTER_ADDR/MASTER_PORT are "
                            "ignored", confidence="likely")


def _drawn(a: Analysis, part: ast.expr) -> str | None:
    """``np.random.randint(...)`` when ``part`` is, or holds, a random draw (made here, or in a function of this
    file or of the project that returns one)."""
    for node in (n for e in origins(a, part) for n in walk(e)):
        if not isinstance(node, ast.Call):
            continue
        qual = a.module.qualname(node.func) or ""
        if qual in _RANDOM_DRAWS:
            return f"{ast.unparse(node.func)}()"
        local = a.module.local_function(node)
        if local is not None and _draws_in(a, local):
            return f"{ast.unparse(node.func)}() (a random draw)"
        site = next((s for s in a.flow.sites if s.call is node), None)
        reach = a.helper(site) if site is not None else None
        if reach is not None and not reach.quals.isdisjoint(_RANDOM_DRAWS) and "socket.socket" not in reach.quals:
            return f"{ast.unparse(node.func)}() (a random draw)"
    return None


def _draws_in(a: Analysis, function: FunctionNode) -> bool:
    """``function`` makes a random draw and binds no socket (a port the OS gives is free, not drawn)."""
    quals = {a.module.qualname(n.func) for n in walk(function) if isinstance(n, ast.Call)}
    return not quals.isdisjoint(_RANDOM_DRAWS) and not any("socket" in (q or "") for q in quals)



# -- values from a config file --------------------------------------------------------------------------------

def _config_rendezvous(a: Analysis) -> Iterator[Finding]:
    """``init_process_group(init_method=cfg.dist_url, rank=cfg.rank)`` whose config file fixes a ``tcp://`` address, a
    rank or a world size: under a launcher its MASTER_ADDR/MASTER_PORT, RANK and WORLD_SIZE are ignored."""
    for site in a.sites(INIT):
        for k in site.call.keywords:
            if k.arg not in ("init_method", "rank", "world_size"):
                continue
            found = read_config(a, k.value)
            if found is None or not (
                    (k.arg == "init_method" and isinstance(found.value, str) and found.value.startswith("tcp://"))
                    or (k.arg != "init_method" and isinstance(found.value, int) and not isinstance(found.value, bool)
                        and not (k.arg == "world_size" and found.value == 1))):
                continue
            said = f"{found.where} sets {ast.unparse(k.value)[:40]} = {found.value!r}"
            host = found.value.removeprefix("tcp://").rsplit(":", 1)[0] if isinstance(found.value, str) else None
            loopback = host is not None and is_loopback(host)
            if loopback:
                said += f" ({CONFIG_LOOPBACK})"
            yield a.finding("DDP008", site.call, f"{k.arg} from the config file: {said}; the launcher's "
                                                 "MASTER_ADDR/MASTER_PORT, RANK and WORLD_SIZE are ignored (use "
                                                 "'env://')", confidence="likely" if found.agreed else "possible",
                            fact=said, marks=frozenset({CONFIG_LOOPBACK}) if loopback else frozenset())
            break


def loopback_master(a: Analysis, key: str | None, value: ast.expr) -> frozenset[str]:
    """:data:`LOOPBACK_MASTER` where ``os.environ[key] = value`` writes MASTER_ADDR as this machine's loopback: a
    constant, a name assigned one, or a parameter every call (and its default) hands one (``passed_constants``)."""
    if isinstance(value, ast.Name):
        found, held = a.module.resolve(value.id, value)
        values: list[ast.expr] = [held] if held is not None else list(passed_constants(a, value)) if found else []
    else:
        values = [value]
    loopback = key == "MASTER_ADDR" and bool(values) and all(
        isinstance(v, ast.Constant) and isinstance(v.value, str) and is_loopback(v.value) for v in values)
    return frozenset({LOOPBACK_MASTER}) if loopback else frozenset()
