"""DDP005 (metrics printed on every rank), DDP006 (torch.save on every rank / of the DDP wrapper),
DDP008 (MASTER_ADDR, MASTER_PORT, world size or rank hard-coded)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from orchestrator.doctor.analysis import INIT, REDUCTIONS, Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.flow import Site
from orchestrator.doctor.names import dotted, last_name
from orchestrator.doctor.project import PRINT_GUARD

METRIC = re.compile(r"loss|acc|correct|metric|perplex|ppl|top1|top5|(^|_)f1($|_)", re.IGNORECASE)
_LOG_METHODS = frozenset({"info", "debug", "warning", "warn", "error", "critical", "log", "exception"})
_LOG_CALLS = frozenset({"print", "wandb.log", "tqdm.write", "mlflow.log_metric", "mlflow.log_metrics"})
# TensorBoard writers and tqdm bars: one per rank is as wrong as one print per rank
_DISPLAY_METHODS = frozenset({"add_scalar", "add_scalars", "set_postfix", "set_description"})
_ENV_KEYS = frozenset({"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "NODE_RANK"})


def is_log(site: Site) -> bool:
    if site.qual in _LOG_CALLS:
        return True
    func = site.call.func
    if not isinstance(func, ast.Attribute):
        return False
    receiver = (dotted(func.value) or "").lower()
    return (func.attr in _LOG_METHODS and "log" in receiver) or func.attr in _DISPLAY_METHODS


def _names(expr: ast.AST) -> list[ast.Name]:
    return [n for n in ast.walk(expr) if isinstance(n, ast.Name)]


def check_prints(a: Analysis) -> Iterator[Finding]:
    """DDP005: a print/log of a loss or metric inside a training loop, on every rank, not reduced."""
    if not a.data_parallel:
        return
    reduced = reduced_names(a)
    print_guarded = print_replaced(a)
    for site in a.flow.sites:
        if not is_log(site) or a.flow.guarded(site) or (print_guarded and site.qual == "print"):
            continue
        loop = a.in_training_loop(site)
        if loop is None:
            continue
        parts = [*site.call.args, *[k.value for k in site.call.keywords]]
        metrics = [n for part in parts for n in ast.walk(part)
                   if isinstance(n, ast.Name | ast.Attribute) and METRIC.search(last_name(n) or "")]
        if not metrics or is_reduced(a, parts, reduced):
            continue
        yield a.finding("DDP005", site.call, f"{last_name(metrics[0])} in the loop at line {loop.lineno}")


def print_replaced(a: Analysis) -> bool:
    """``builtins.print`` is replaced (DINO's/MAE's ``setup_for_distributed``: print on the main rank only),
    in the script or in a helper it calls."""
    return PRINT_GUARD in a.helper_quals or any(
        isinstance(n, ast.Assign) and any(a.module.qualname(t) in ("builtins.print", "__builtin__.print")
                                          for t in n.targets if isinstance(t, ast.Attribute))
        for n in a.module.nodes)


def reduced_names(a: Analysis) -> set[str]:
    """Names handed to a reduction (all_reduce, all_gather, ...), or to a helper of this file that makes one."""
    names: set[str] = set()
    for site in a.flow.sites:
        if a.reaching(site, REDUCTIONS) is None:
            continue
        for arg in [*site.call.args, *[k.value for k in site.call.keywords]]:
            names.update(n.id for n in _names(arg))
        parent = a.module.parents.get(site.call)
        if isinstance(parent, ast.Assign):
            names.update(n.id for t in parent.targets for n in _names(t))
    return names


def is_reduced(a: Analysis, parts: list[ast.expr], reduced: set[str], depth: int = 0) -> bool:
    for part in parts:
        for name in _names(part):
            if name.id in reduced:
                return True
            _, value = a.module.resolve(name.id, name)
            if value is not None and depth < 3 and is_reduced(a, [value], reduced, depth + 1):
                return True
    return False


def check_saves(a: Analysis) -> Iterator[Finding]:
    """DDP006: torch.save outside any rank condition (unless the path is per rank), or of the DDP wrapper."""
    if not a.distributed:
        return
    for site in a.sites(frozenset({"torch.save"})):
        call = site.call
        problems: list[str] = []
        wrapper = _saved_wrapper(a, call.args[0]) if call.args else None
        if wrapper is not None:
            problems.append(f"saves the DDP wrapper {wrapper}, not {wrapper}.module: its keys start with 'module.'")
        path = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "f"), None)
        one_path = path is not None and _file_path(a, path, 0) and not a.ranks.dependent(path)
        if one_path and not a.flow.guarded(site):
            problems.append("runs on every rank, all writing the same file")
        elif one_path and _per_node_guard(a, site):
            problems.append("guarded by the local rank: local rank 0 of every node writes the same file "
                            "(one shared file system)")
        if problems:
            yield a.finding("DDP006", call, "; ".join(problems))


def _per_node_guard(a: Analysis, site: Site) -> bool:
    """The rank condition around ``site`` in its function tests only a local rank (``local_rank == 0``)."""
    tests = _guard_tests(a, site, 0)
    if not tests or any((s.qual or "").endswith("multiprocessing.spawn") for s in a.flow.sites):
        return False  # mp.spawn: one node, where the local rank is the global one
        return False
    kinds = {a.ranks.source(n) for t in tests for n in ast.walk(t)
             if isinstance(n, ast.Name | ast.Attribute | ast.Call)}
    kinds.discard(None)
    return kinds == {"local"}


def _guard_tests(a: Analysis, site: Site, depth: int) -> list[ast.expr]:
    """The rank conditions that guard ``site``: around it, or around every call of its function."""
    if site.branch is not None:
        return [site.branch.node.test]
    if site.early_guard is not None:
        return [site.early_guard.test]
    if depth > 3 or site.function is None or site.function not in a.flow.guarded_functions:
        return []
    tests: list[ast.expr] = []
    for caller in a.flow.sites:
        if a.module.local_function(caller.call) is site.function:
            found = _guard_tests(a, caller, depth + 1)
            if not found:
                return []
            tests += found
    return tests


_PATH_CALLS = frozenset({"join", "Path", "joinpath", "with_suffix", "with_name", "format", "expanduser"})
_PATH_WORDS = re.compile(r"path|file|ckpt|checkpoint|dir|fname|out", re.IGNORECASE)


def _file_path(a: Analysis, expr: ast.expr, depth: int) -> bool:
    """``expr`` visibly names a file (a string, an f-string, os.path.join, Path / ..., a name like
    ``ckpt_path``); a buffer (``io.BytesIO()``) or an open handle is not judged."""
    if depth > 4:
        return False
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, str)
    if isinstance(expr, ast.JoinedStr):
        return True
    if isinstance(expr, ast.BinOp):
        return isinstance(expr.op, ast.Add | ast.Div | ast.Mod) and (
            _file_path(a, expr.left, depth + 1) or _file_path(a, expr.right, depth + 1))
    if isinstance(expr, ast.Call):
        return last_name(expr.func) in _PATH_CALLS
    if isinstance(expr, ast.Name | ast.Attribute):
        key = dotted(expr)
        value = a.module.resolve(key, expr)[1] if key is not None else None
        if value is not None:
            return _file_path(a, value, depth + 1)
        return bool(_PATH_WORDS.search(last_name(expr) or ""))
    return False


def _saved_wrapper(a: Analysis, expr: ast.expr) -> str | None:
    """The name of the DDP wrapper ``expr`` saves (itself or its state_dict()), if it does."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "state_dict":
            if a.wrapped(node.func.value):
                return ast.unparse(node.func.value)
        elif isinstance(node, ast.Name) and a.wrapped(node):
            parent = a.module.parents.get(node)
            if not isinstance(parent, ast.Attribute):
                return node.id
    return None


def check_hard_coded(a: Analysis) -> Iterator[Finding]:
    """DDP008: os.environ[MASTER_ADDR/MASTER_PORT/WORLD_SIZE/RANK] = constant (not a fallback under
    ``if "X" not in os.environ``), or init_process_group with a constant world size, rank or tcp:// address."""
    for node in a.module.nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                key = a.ranks.env_key(target)
                if key in _ENV_KEYS and _constant(a, node.value) and not _fallback(a, node, key):
                    yield a.finding("DDP008", node, f"os.environ[{key!r}] = {ast.unparse(node.value)[:40]}")
    for site in a.sites(INIT):
        backend = site.call.args[0] if site.call.args else next(
            (k.value for k in site.call.keywords if k.arg == "backend"), None)
        size = next((k.value for k in site.call.keywords if k.arg == "world_size"), None)
        if (isinstance(backend, ast.Constant) and backend.value == "fake") or (
                isinstance(size, ast.Constant) and size.value == 1):
            continue  # a fake or one-process group: nothing to rendezvous with
        for k in site.call.keywords:
            if k.arg in ("world_size", "rank") and _constant(a, k.value):
                yield a.finding("DDP008", site.call, f"{k.arg}={ast.unparse(k.value)}")
                break
            if k.arg == "init_method" and isinstance(k.value, ast.Constant) and str(k.value.value).startswith("tcp://"):
                yield a.finding("DDP008", site.call, f"init_method={k.value.value!r}")
                break
    if a.data_parallel or a.sites(INIT):
        yield from _rendezvous_defaults(a)


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
        if not (isinstance(default, ast.Constant) and isinstance(default.value, str)):
            continue
        value = default.value
        if value.startswith(("tcp://", "file://")) or (value and any(_URL_FLAGS.search(f) for f in flags)
                                                        and re.fullmatch(r"\d+\.\d+\.\d+\.\d+", value)):
            flag = flags[0] if flags else "the flag"
            yield a.finding("DDP008", site.call, f"{flag} defaults to {value!r}: when the flag is forgotten, "
                                                 "the launcher's MASTER_ADDR/MASTER_PORT are ignored and the "
                                                 "ranks rendezvous there, or train N independent copies; "
                                                 "default to 'env://'")


def _constant(a: Analysis, expr: ast.expr, depth: int = 0) -> bool:
    if depth > 4:
        return False
    if isinstance(expr, ast.Constant):
        return expr.value is not None
    if isinstance(expr, ast.JoinedStr):
        return all(isinstance(v, ast.Constant)
                   or (isinstance(v, ast.FormattedValue) and _constant(a, v.value, depth + 1)) for v in expr.values)
    if isinstance(expr, ast.Call) and a.module.qualname(expr.func) in ("str", "int") and len(expr.args) == 1:
        return _constant(a, expr.args[0], depth + 1)
    if isinstance(expr, ast.Name):
        _, value = a.module.resolve(expr.id, expr)
        return value is not None and _constant(a, value, depth + 1)
    return False


def _fallback(a: Analysis, node: ast.AST, key: str) -> bool:
    current = a.module.parents.get(node)
    while current is not None:
        if isinstance(current, ast.If) and any(isinstance(n, ast.Constant) and n.value == key
                                               for n in ast.walk(current.test)):
            return True
        current = a.module.parents.get(current)
    return False
