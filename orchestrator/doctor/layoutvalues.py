"""Where a framework layout's argument comes from (DDP023, ``rules_layout.py``): a literal, a value left out, a flag's
or a parameter's default, the launcher's environment, or the config file the script loads (``layoutconfig.py``)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.argsconfig import args_config
from orchestrator.doctor.confidence import Confidence
from orchestrator.doctor.findings import ArgsConfig
from orchestrator.doctor.frameworks import devices_of
from orchestrator.doctor.layoutconfig import read_config
from orchestrator.source.branches import twin_value
from orchestrator.source.exprnames import dotted
from orchestrator.source.walk import walk

_DEPTH = 4
FLAG_SAID = "the flag's default, unless passed"  # in the finding's detail when a flag's default fixes the layout
# launcher variables a layout that follows the launch reads
_ENV_NAMES = re.compile(r"^(SLURM_\w+|WORLD_SIZE|LOCAL_WORLD_SIZE|NUM_NODES|NNODES|N_NODES|GROUP_WORLD_SIZE|"
                        r"NODE_COUNT|PET_\w+|OMPI_\w+|PMI_\w+)$")
_ENV_CALLS = frozenset({"os.environ.get", "os.getenv", "os.environ.__getitem__", "getenv", "environ.get"})


@dataclass(frozen=True)
class LayoutValue:
    """Where a layout argument comes from: ``count`` (a number of devices or nodes; "auto": every device; None: it
    follows the launch or is not known) and ``kind`` (literal, left out, flag, parameter, environment, unknown)."""

    count: int | str | None
    kind: str
    said: str = ""
    run_as_is: bool = False  # a config file the script loads when started with no argument (``CONFIG_DEFAULT``)
    args: ArgsConfig | None = None  # where the script's arguments give the count instead (``argsconfig.py``)

    @property
    def fixed(self) -> bool:
        return isinstance(self.count, int) and self.kind in ("literal", "left out", "flag", "parameter", "config",
                                                             "config guess")

    @property
    def confidence(self) -> Confidence:
        return "certain" if self.kind in ("literal", "left out") else "possible" if self.kind == "config guess" else (
            "likely")


def resolve_layout(a: Analysis, expr: ast.expr, flags: dict[str, tuple[int, str]], key: str,
                   depth: int = 0) -> LayoutValue:
    """Where ``expr`` (a layout argument named ``key``) comes from."""
    nodes_key = key in ("num_nodes", "num_machines")
    if _from_environment(a, expr):
        return LayoutValue(None, "environment")
    if isinstance(expr, ast.Constant):
        count = layout_count(expr.value, nodes_key)
        return LayoutValue(count, "literal", f"{said_key(key)}={expr.value!r}")
    if isinstance(expr, ast.List | ast.Tuple) and not nodes_key and all(isinstance(e, ast.Constant) for e in expr.elts):
        ids = [e.value for e in expr.elts if isinstance(e, ast.Constant)]  # devices=[0, 1]: two GPUs, those ids
        return LayoutValue(layout_count(ids, False), "literal", f"{said_key(key)}={ids!r}")
    if depth > _DEPTH:
        return LayoutValue(None, "unknown")
    if isinstance(expr, ast.Attribute) and expr.attr in flags and not a.module.values_anywhere(dotted(expr) or ""):
        default, option = flags[expr.attr]
        return LayoutValue(layout_count(default, nodes_key), "flag",
                      f"{said_key(key)}={default} ({option} defaults to {default}: {FLAG_SAID})")
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "int" and expr.args:
        return resolve_layout(a, expr.args[0], flags, key, depth + 1)
    if isinstance(expr, ast.Name):
        found, value = a.module.resolve(expr.id, expr)
        twin = value and twin_value(a.module.parents, value)  # the other side of an if/else: devices = args.num_gpu
        sides = [resolve_layout(a, v, flags, key, depth + 1) for v in (value, twin) if v]
        if sides:  # ... else: devices = "auto": the side a flag or parameter sets, if either
            return next((v for v in sides if v.kind in ("flag", "parameter")), sides[0])
        if found:
            return _parameter(a, expr, flags, key, depth)
    configured = read_config(a, expr) if isinstance(expr, ast.Attribute | ast.Subscript) else None
    count = layout_count(configured.value, nodes_key) if configured is not None else None
    if configured is not None and count is not None:
        passed = args_config(a, configured, configured.keys, None, count if configured.by_default else None) if (
            nodes_key and isinstance(count, int)) else None
        return LayoutValue(count, "config" if configured.agreed else "config guess",
                           f"{said_key(key)}={configured.value!r} ({configured.where}: the config's default, unless "
                           "overridden)", args=passed)
    return LayoutValue(None, "unknown")


def _parameter(a: Analysis, name: ast.Name, flags: dict[str, tuple[int, str]], key: str, depth: int) -> LayoutValue:
    """A parameter: what this file's calls pass for it, else its default (a CLI's flag: ``def setup(devices=8)``)."""
    function = a.module.function_of(name)
    if function is None:
        return LayoutValue(None, "unknown")
    passed = a.module.argument_for(function, name.id)
    if passed:
        values = [resolve_layout(a, v, flags, key, depth + 1) for v in passed]
        return values[0] if len({v.count for v in values}) == 1 and values[0].fixed else LayoutValue(None, "unknown")
    params = [*function.args.posonlyargs, *function.args.args]
    defaults = dict(zip([p.arg for p in params[len(params) - len(function.args.defaults):]], function.args.defaults,
                        strict=True))
    defaults.update({p.arg: d for p, d in zip(function.args.kwonlyargs, function.args.kw_defaults, strict=True)
                     if d is not None})
    default = defaults.get(name.id)
    if not isinstance(default, ast.Constant):
        return LayoutValue(None, "unknown")
    count = layout_count(default.value, key in ("num_nodes", "num_machines"))
    return LayoutValue(count, "parameter", f"{said_key(key)}={default.value!r} ({function.name}'s {name.id} "
                                           f"defaults to {default.value!r}: a parameter's default)")


def layout_count(value: object, nodes: bool) -> int | str | None:
    """A node count (a positive int) or a device count (``devices_of``: a count, a list of ids, "auto")."""
    return (value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None) if nodes else (
        devices_of(value))


def said_key(key: str) -> str:
    return "num_nodes" if key in ("num_nodes", "num_machines") else key


def _from_environment(a: Analysis, expr: ast.expr) -> bool:
    """``expr`` reads the launcher's environment: ``os.environ[...]``, ``os.getenv(...)``, a ``SLURM_NNODES``-like
    name, through this file's names."""
    for node in walk(expr):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _ENV_NAMES.match(node.value):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "environ":
            return True
        if isinstance(node, ast.Call) and (dotted(node.func) or "") in _ENV_CALLS:
            return True
    return False
