"""DDP008: MASTER_ADDR, MASTER_PORT, world size, rank or the rendezvous address hard-coded or overwritten
(an ``os.environ`` assignment, an ``init_process_group`` argument, an argparse default, a ``tcp://`` URL)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.launcherflags import (
    LAUNCHER_READS,
    constant_flag_default,
    default_flag,
    flag_declaration,
    reads_env,
)
from orchestrator.doctor.rendezvousvalues import constant, env_url, fresh_local_port, overwrites, tcp_literal
from orchestrator.doctor.rules_rendezvous_computed import MASTER_KEYS, check_computed, loopback_master
from orchestrator.launchstyles.spawngates import opt_in
from orchestrator.source.analysis import INIT
from orchestrator.source.analysis import Analysis as Reading
from orchestrator.source.argflags import attribute_read, declared
from orchestrator.source.branches import statements_after, unconditional
from orchestrator.source.exprnames import dotted, last_name, positional_parameters
from orchestrator.source.flow import Site
from orchestrator.source.names import Module
from orchestrator.source.walk import walk
from orchestrator.source.worldsize import group_of_one

_ENV_KEYS = frozenset({"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "NODE_RANK"})


def _opted_in(a: Reading, node: ast.Assign) -> bool:
    """``if dist_url == "auto": dist_url = f"tcp://127.0.0.1:{port}"``: a value the user asked for by
    passing a keyword (``auto``), not one that overrides the launcher's."""
    names = {dotted(t) for t in node.targets}
    current = a.module.parents.get(node)
    while current is not None and not isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef):
        test = current.test if isinstance(current, ast.If) else None
        if isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.Eq) and dotted(test.left) in names and (
                isinstance(test.comparators[0], ast.Constant) and isinstance(test.comparators[0].value, str)):
            return True
        current = a.module.parents.get(current)
    return False


def check_hard_coded(a: Analysis) -> Iterator[Finding]:
    """DDP008: os.environ[MASTER_ADDR/MASTER_PORT/WORLD_SIZE/RANK] = constant (not a fallback under
    ``if "X" not in os.environ``), or init_process_group with a constant world size, rank or tcp:// address; then
    the values computed wrong (``rules_rendezvous_computed``), where no line already says so."""
    seen: set[int] = set()
    for finding in _written(a):
        seen.add(finding.line)
        yield finding
    yield from (f for f in check_computed(a) if f.line not in seen)


def _written(a: Analysis) -> Iterator[Finding]:
    launched = a.data_parallel or bool(a.sites(INIT))
    unread = _masters_unread(a)
    for node in a.module.nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                key = a.ranks.env_key(target)
                if key in unread:
                    continue
                if key in _ENV_KEYS and not _fallback(a, node, key) and not _off_the_launchers_path(a, node) and (
                        constant(a, node.value) or (launched and overwrites(a, node.value, key))):
                    yield a.finding("DDP008", node, f"os.environ[{key!r}] = {ast.unparse(node.value)[:40]}: the "
                                                    "launcher's value is overwritten",
                                    marks=frozenset() if _called_off_the_launchers_path(a, node) else
                                    loopback_master(a, key, node.value))
                elif key in MASTER_KEYS and launched and not _fallback(a, node, key) and not _off_the_launchers_path(
                        a, node) and (declared := constant_flag_default(a, node.value)) is not None:
                    named, default = declared
                    yield a.finding("DDP008", node, f"os.environ[{key!r}] = {ast.unparse(node.value)[:30]}, the flag "
                                                    f"{named} with the default {default}: the launcher's {key} is "
                                                    "overwritten whenever the flag is not passed (two jobs on one "
                                                    "node meet on one port)", confidence="likely")
                elif launched and not isinstance(target, ast.Subscript) and tcp_literal(node.value) and not (
                        env_url(a, node.value) or _opted_in(a, node) or fresh_local_port(a, node.value)):
                    yield a.finding("DDP008", node, f"{ast.unparse(target)} = {ast.unparse(node.value)[:50]}: a "
                                                    "fixed rendezvous address")
    for site in a.sites(INIT):
        backend = site.call.args[0] if site.call.args else next(
            (k.value for k in site.call.keywords if k.arg == "backend"), None)
        if (isinstance(backend, ast.Constant) and backend.value == "fake") or group_of_one(site.call):
            continue  # a fake or one-process group: nothing to rendezvous with
        for k in site.call.keywords:
            if k.arg in ("world_size", "rank") and constant(a, k.value):
                yield a.finding("DDP008", site.call, f"{k.arg}={ast.unparse(k.value)}")
                break
            # (a script that spawns its own workers is started by hand, its world size the user's to pass: DDP014)
            spawned = k.arg == "world_size" and (a.spawns or (a.outer is not None and a.outer.spawns))
            flag = default_flag(a, k.value, 0) if k.arg in LAUNCHER_READS and not spawned else None
            if flag is not None and not reads_env(a, LAUNCHER_READS[str(k.arg)][0]):
                variable, then = LAUNCHER_READS[str(k.arg)][0][0], LAUNCHER_READS[str(k.arg)][1]
                yield a.finding("DDP008", site.call, f"{k.arg} from the flag {flag} with a fixed default, {variable} "
                                                     f"never read: under a launcher (no flag passed) {then}")
                break
            if k.arg == "init_method" and isinstance(k.value, ast.Constant) and str(k.value.value).startswith("tcp://"):
                yield a.finding("DDP008", site.call, f"init_method={k.value.value!r}")
                break
            fixed = _formatted_url(a, k.value) if k.arg == "init_method" else None
            if fixed is not None:
                yield a.finding("DDP008", site.call, f"init_method={ast.unparse(k.value)[:50]}: {fixed}")
                break
    if a.data_parallel or a.sites(INIT) or _project_inits(a):
        yield from _rendezvous_defaults(a)


def _masters_unread(a: Analysis) -> frozenset[str]:
    """``MASTER_ADDR``/``MASTER_PORT`` when every process group the file starts meets at a URL written in the call
    (``init_method="file:///shared/dist_file"``, ``f"file://{folder}/rdzv"``, ``"tcp://10.1.1.20:23456"``): nothing
    reads what the file writes into the environment for them (a fixed URL is said at the call; Würstchen's constant
    MASTER_ADDR/MASTER_PORT beside its ``file://`` rendezvous)."""
    inits = a.sites(INIT)
    if not inits:
        return frozenset()
    for site in inits:
        method = next((k.value for k in site.call.keywords if k.arg == "init_method"),
                      site.call.args[1] if len(site.call.args) > 1 else None)
        formatted = isinstance(method, ast.JoinedStr) and bool(method.values)
        head = method.values[0] if isinstance(method, ast.JoinedStr) and method.values else method
        # a file:// URL, also formatted (its folder); a tcp:// URL written whole (a formatted one may hold the values)
        if not (isinstance(head, ast.Constant) and isinstance(head.value, str)
                and head.value.startswith("file://" if formatted else ("file://", "tcp://"))):
            return frozenset()
    return frozenset({"MASTER_ADDR", "MASTER_PORT"})


def _formatted_url(a: Reading, expr: ast.expr) -> str | None:
    """``'tcp://%s' % args.dist_address`` or ``'tcp://{}:{}'.format(host, port)``: a URL built by formatting,
    none of whose parts reads the environment, with a part that is a constant or a flag (never reassigned) with a
    fixed default. Returns what fixes it (the flag and its default), or None."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod):
        head = expr.left
        parts = list(expr.right.elts) if isinstance(expr.right, ast.Tuple) else [expr.right]
    elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "format":
        head = expr.func.value
        parts = list(expr.args)
    else:
        return None
    if not (isinstance(head, ast.Constant) and isinstance(head.value, str) and head.value.startswith("tcp://")):
        return None
    if any(a.ranks.env_key(n) is not None for part in parts for n in walk(part)
           if isinstance(n, ast.Subscript | ast.Call)):
        return None  # "tcp://%s:%s" % (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]): the launcher's
    for part in parts:
        if constant(a, part):
            return f"the constant {ast.unparse(part)}"
        if not isinstance(part, ast.Attribute) or a.module.values_anywhere(dotted(part) or ""):
            continue
        call = flag_declaration(a, part.attr)
        default = next((k.value for k in call.keywords if k.arg == "default"), None) if call is not None else None
        if isinstance(default, ast.Constant) and isinstance(default.value, str | int) and default.value != "":
            return (f"--{part.attr} defaults to {default.value!r}: when the flag is forgotten, the launcher's "
                    "MASTER_ADDR/MASTER_PORT are ignored")
    return None


def _project_inits(a: Reading) -> bool:
    """The script's project starts a process group somewhere (in a module read while following the script's
    calls): a parser module's ``--init_method`` default is the one that process group meets at."""
    return any(isinstance(node, ast.Call) and module.qualname(node.func) in INIT
               for module in _project_modules(a)[1:] for node in module.nodes)


def _project_modules(a: Reading) -> list[Module]:
    """The script's module, then the project modules its calls reach (read here); none outside a project."""
    root = a.outer if a.outer is not None else a
    if root.project is None:
        return []
    list(root.helper_quals)  # read the helpers the script calls
    return [root.module, *(module for _, module in root.project.helpers())]


_URL_FLAGS = re.compile(r"dist.?url|init.?method|rdzv|rendezvous|master", re.IGNORECASE)


def _rendezvous_defaults(a: Analysis) -> Iterator[Finding]:
    """``parser.add_argument("--dist-url", default="tcp://10.0.0.1:23456")``: a flag forgotten under a
    launcher means every rank meets at that address (or, with world_size/rank flags at their defaults,
    each process trains its own copy) instead of the launcher's MASTER_ADDR/MASTER_PORT."""
    for site in a.flow.sites:
        if not (isinstance(site.call.func, ast.Attribute) and site.call.func.attr == "add_argument"):
            continue
        default = next((k.value for k in site.call.keywords if k.arg == "default"), None)
        flags = [x.value for x in site.call.args if isinstance(x, ast.Constant) and isinstance(x.value, str)]
        if isinstance(default, ast.JoinedStr) and tcp_literal(default) and not env_url(a, default):
            value = "tcp://" + ast.unparse(default)[len('f"tcp://'):-1]  # f"tcp://127.0.0.1:{port}"
        elif isinstance(default, ast.Constant) and isinstance(default.value, str):
            value = default.value
        else:
            continue
        if _always_overwritten(a, flags) or _never_read(a, site.call) or _read_off_launch(a, site.call):
            continue  # args.dist_url = ... on every run, never read, or read only where no launcher's run goes
        if value.startswith(("tcp://", "file://")) or (value and any(_URL_FLAGS.search(f) for f in flags)
                                                        and re.fullmatch(r"\d+\.\d+\.\d+\.\d+", value)):
            flag = flags[0] if flags else "the flag"
            yield a.finding("DDP008", site.call, f"{flag} defaults to {value!r}: when the flag is forgotten, "
                                                 "the launcher's MASTER_ADDR/MASTER_PORT are ignored and the "
                                                 "ranks rendezvous there, or train N independent copies; "
                                                 "default to 'env://'")


def _never_read(a: Reading, call: ast.Call) -> bool:
    """No module of the script's project reads the flag (``--init_method`` declared, ``init_method='env://'`` used)."""
    flag, modules = declared(call), _project_modules(a)
    return flag is not None and bool(modules) and not attribute_read([m.tree for m in modules], flag.attribute)


def _read_off_launch(a: Analysis, call: ast.Call) -> bool:
    """Every read of the flag in this file sits on a side no launched rank takes, itself or through the parameter of
    the file's function it is handed to (lenet5's ``setup_distributed(args.backend, args.dist_url)``, whose
    ``init_method=dist_url`` is the ``else`` of ``if "RANK" in os.environ and "WORLD_SIZE" in os.environ:``, the
    fallback of a run with no launcher): under a launcher the default is never used."""
    flag = declared(call)
    dead = a.flow.dead_lines()
    reads = [n for n in a.module.nodes if isinstance(n, ast.Attribute) and flag is not None
             and n.attr == flag.attribute and isinstance(n.ctx, ast.Load)]
    return bool(reads) and all(_off_launch(a, read, dead) for read in reads)


def _off_launch(a: Analysis, read: ast.expr, dead: list[range]) -> bool:
    if any(read.lineno in lines for lines in dead):
        return True
    handed = a.module.parents.get(read)
    handed = a.module.parents.get(handed) if isinstance(handed, ast.keyword) else handed
    function = a.module.local_function(handed) if isinstance(handed, ast.Call) else None
    if not isinstance(handed, ast.Call) or function is None:
        return False
    params = positional_parameters(function, handed)
    index = next((i for i, arg in enumerate(handed.args) if arg is read), None)
    name = next((k.arg for k in handed.keywords if k.value is read), None) or (
        params[index] if index is not None and index < len(params) else None)
    uses = [n for stmt in function.body for n in walk(stmt) if isinstance(n, ast.Name) and n.id == name]
    return bool(uses) and all(any(use.lineno in lines for lines in dead) for use in uses)


def _always_overwritten(a: Reading, flags: list[str]) -> bool:
    """``args.dist_url = "tcp://127.0.0.1:" + str(port)`` at the top of a function or of the ``__main__`` block,
    under no other ``if``, ``for`` or ``try``: every run replaces the flag's value, so its default never counts."""
    dests = {f.lstrip("-").replace("-", "_") for f in flags if f.startswith("--")}
    for node in a.module.nodes:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr in dests
                                                for t in node.targets) and unconditional(node, a.module.parents):
            return True
    return False


def _off_the_launchers_path(a: Analysis, node: ast.AST) -> bool:
    """The write sits where a launcher's run does not go: in the ``except`` of a ``try`` that starts the process group
    (EfficientViT's ``RANK=0, WORLD_SIZE=1`` after a failed rendezvous: DDP019 reports that), or in a function this
    file calls only under an opt-in flag (GLM's ``if args.deepspeed_mpi: mpi_define_env(args)``: another launcher's
    path, asked for); or it is for a group of one process that its own block starts next (lightweight-gan's sync-BN
    group on one GPU, ``init_process_group("nccl", rank=0, world_size=1)``: nothing to meet)."""
    if _for_one_process(a, node):
        return True
    child, current = node, a.module.parents.get(node)
    while current is not None:
        if isinstance(current, ast.Try) and any(child is h for h in current.handlers) and any(
                isinstance(n, ast.Call) and a.module.qualname(n.func) in INIT
                for stmt in current.body for n in walk(stmt)):
            return True
        child, current = current, a.module.parents.get(current)
    callers = _callers(a, node)
    return bool(callers) and all(_under_opt_in(a, s.call) for s in callers)


def _for_one_process(a: Analysis, node: ast.AST) -> bool:
    """A later statement of ``node``'s own block starts a process group, and every group started there is of one
    process (``world_size=1`` written in)."""
    inits = [n for stmt in statements_after(a.module.parents.get(node), node) for n in walk(stmt)
             if isinstance(n, ast.Call) and a.module.qualname(n.func) in INIT]
    return bool(inits) and all(group_of_one(call) for call in inits)


def _called_off_the_launchers_path(a: Analysis, node: ast.AST) -> bool:
    """Every call of the function around ``node`` in this file sits on a side no launched rank takes (laura_gpt_se's
    ``setup()``, called in the ``else`` of ``if "SLURM_PROCID" in os.environ:``, its own ``mp.spawn`` run): the write
    is the script's own launch, not what a launcher's run meets (reported, never refused across nodes)."""
    callers = _callers(a, node)
    return bool(callers) and all(a.flow.never_runs(s) for s in callers)


def _callers(a: Analysis, node: ast.AST) -> list[Site]:
    """The call sites in this file of the function around ``node`` (none where ``node`` is at module level)."""
    function = a.module.function_of(node)
    if function is None:
        return []
    return [s for s in a.flow.sites if a.module.local_function(s.call) is function]


def _under_opt_in(a: Analysis, call: ast.Call) -> bool:
    """An ``if`` around ``call`` (in its function) tests a flag the user passes, off by default (``args.x``, alone or
    in an ``and``)."""
    child: ast.AST = call
    current = a.module.parents.get(call)
    while current is not None and not isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef):
        if isinstance(current, ast.If) and child in current.body:
            test = current.test
            parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
            if any(opt_in(a, part) for part in parts):
                return True
        child, current = current, a.module.parents.get(current)
    return False


_LAUNCHED = _ENV_KEYS | {"SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK", "LOCAL_WORLD_SIZE"}


def _fallback(a: Reading, node: ast.AST, key: str) -> bool:
    """A default for runs with no launcher: under ``if "X" not in os.environ``, or in the ``else`` of
    ``if "RANK" in os.environ`` (DINO's single-GPU path)."""
    child: ast.AST = node
    current = a.module.parents.get(node)
    while current is not None:
        if isinstance(current, ast.If):
            names = {n.value for n in walk(current.test) if isinstance(n, ast.Constant)}
            if key in names:
                return True
            if names & _LAUNCHED and any(isinstance(n, ast.In) for n in walk(current.test)) and (
                    child in current.orelse):
                return True
            if child in current.body and (
                    (names & _LAUNCHED and _unset(current.test)) or a.flow.dead_side(current.test) == "body"):
                return True  # no launcher there: ``if "MASTER_ADDR" not in os.environ:``, ``if not args.distributed:``
        child, current = current, a.module.parents.get(current)
    return False


def _unset(test: ast.expr) -> bool:
    """``"X" not in os.environ``, ``os.environ.get("X") is None``, ``not os.environ.get("X")``: the branch where a
    launcher variable is missing (one part of an ``and`` is enough; every part of an ``or`` must be one)."""
    if isinstance(test, ast.BoolOp):
        return any(_unset(v) for v in test.values) if isinstance(test.op, ast.And) else all(
            _unset(v) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return isinstance(test.operand, ast.Call) and last_name(test.operand.func) in ("get", "getenv")
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        return isinstance(op, ast.NotIn) or (isinstance(op, ast.Is) and isinstance(right, ast.Constant)
                                             and right.value is None)
    return False
