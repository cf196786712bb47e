"""DDP023: a framework layout that cannot follow the launcher.

Lightning's ``Trainer(...)``, Fabric's ``Fabric(...)`` (also ``Trainer.from_argparse_args(args)``) and
detectron2's ``launch(main, num_gpus_per_machine, num_machines=...)`` fix how many nodes and devices the run has.
Under a launcher that starts several GPUs per node or several nodes, Lightning and Fabric check devices x num_nodes
against ``WORLD_SIZE`` and stop at start-up (after the queue wait), and detectron2's ``launch`` starts only its own
count. The layout is stuck when ``num_nodes`` (or ``num_machines``) is a fixed value, or ``devices``/``gpus`` a
fixed count: written in the call, left out (``num_nodes`` defaults to 1), a flag's default or a parameter's default
(a ``CLI(setup)`` whose ``devices: int = 8`` is the flag). Not stuck: ``devices="auto"``/``-1`` and a ``num_nodes``
read from the environment (``SLURM_NNODES``, ``WORLD_SIZE // LOCAL_WORLD_SIZE``) or computed.

A ``Fabric()`` with no layout argument at all leaves the layout to ``fabric run``'s flags (``--devices``,
``--num-nodes``): not reported. Reported once per file, at the first such call, and only where the script is meant
to run on several GPUs or nodes: it names a DDP/FSDP/DeepSpeed strategy, uses the framework's ranks or collectives
(``fabric.launch()``, ``global_rank``, ``all_gather``, a ``DistributedSampler``, ``sync_dist=``), fixes more than
one device or node, asks for every GPU of the machine (``layoutintent.every_gpu``), or takes its layout from flags
(also spread in: ``Trainer(**vars(args))``; on either side of an if/else). Confidence: certain for a literal or
a value left out, likely for a flag's or a parameter's default (the user may pass the flag). A warning; on more than
one node a certain ``num_nodes`` that differs is an error (``feasibility.py``). ``layoutflags.flag_layout_warning``
owns the flag defaults when a layout is asked (it knows the flags passed).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.confidence import Confidence
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.frameworknames import LIGHTNING_CLI, QUALIFIED, import_aliases, qualified_name
from orchestrator.doctor.frameworks import devices_of
from orchestrator.doctor.layoutconfig import (
    CLI_CONFIG,
    bare_cli,
    cli_trainer,
    configured_trainer,
    key_line,
    project_cli,
    read_config,
    section_parallel,
    shown,
)
from orchestrator.doctor.layoutflags import (
    TRAINER_FLAG_ADDERS,
    declared_layout_flags,
    literal_keys,
    plain_parser,
    spread_flags,
    spread_without_nodes,
)
from orchestrator.doctor.layoutintent import every_gpu, rank_use, strategy_parallel
from orchestrator.launchstyles.installed import SPAWNERS
from orchestrator.source.branches import twin_value
from orchestrator.source.configfiles import ConfigValue
from orchestrator.source.names import dotted, last_name
from orchestrator.source.walk import walk
from orchestrator.spec.framework import Framework

_DEPTH = 4
FLAG_SAID = "the flag's default, unless passed"  # in the finding's detail when a flag's default fixes the layout
_ADDS = (b"--num_nodes", b"--num-nodes", b"add_argparse_args", *(name.encode() for name in TRAINER_FLAG_ADDERS))
FLAG_DEFAULT = "a flag's default fixes the layout"  # the finding's mark then (flag_owned reads it)
# the mark of a node count from the config the script loads with no argument (feasibility.py refuses it across nodes)
CONFIG_DEFAULT = "the config the script loads with no argument fixes the node count"
# launcher variables a layout that follows the launch reads
_ENV_NAMES = re.compile(r"^(SLURM_\w+|WORLD_SIZE|LOCAL_WORLD_SIZE|NUM_NODES|NNODES|N_NODES|GROUP_WORLD_SIZE|"
                        r"NODE_COUNT|PET_\w+|OMPI_\w+|PMI_\w+)$")
_ENV_CALLS = frozenset({"os.environ.get", "os.getenv", "os.environ.__getitem__", "getenv", "environ.get"})
_LAYOUT_FRAMEWORKS = frozenset({"lightning", "fabric"})
_WHERE = re.compile(r"^(.*?):(\d+)(?::|$)")  # a Layout's where: "train.py:40: Trainer(...)"
_LAYOUT_ARGS = frozenset({"devices", "gpus", "num_nodes", "strategy", "accelerator"})
# installed packages' argument parsers -> the layout flags they declare, with their defaults (the package is not read)
_PACKAGE_PARSERS: dict[str, dict[str, tuple[int, str]]] = {
    f"{package}.engine{module}.default_argument_parser": {"num_gpus": (1, "--num-gpus"),
                                                          "num_machines": (1, "--num-machines")}
    for package in ("detectron2", "fastreid") for module in ("", ".defaults")
}


@dataclass(frozen=True)
class _Value:
    """Where a layout argument comes from: ``count`` (a number of devices or nodes; "auto": every device; None: it
    follows the launch or is not known) and ``kind`` (literal, left out, flag, parameter, environment, unknown)."""

    count: int | str | None
    kind: str
    said: str = ""
    run_as_is: bool = False  # a config file the script loads when started with no argument (``CONFIG_DEFAULT``)

    @property
    def fixed(self) -> bool:
        return isinstance(self.count, int) and self.kind in ("literal", "left out", "flag", "parameter", "config",
                                                             "config guess")

    @property
    def confidence(self) -> Confidence:
        return "certain" if self.kind in ("literal", "left out") else "possible" if self.kind == "config guess" else (
            "likely")


def check_framework_layout(a: Analysis) -> Iterator[Finding]:
    """DDP023 at each Trainer/Fabric/detectron2 ``launch`` call whose layout is fixed, in a script meant to run on
    several GPUs or nodes."""
    flags = _flags(a)
    aliases = import_aliases(a.module.tree)
    intent = rank_use(a.module.tree)
    training, evaluating = _used_for(a, frozenset({"fit"})), _used_for(a, frozenset({"test", "validate", "predict"}))
    calls = sorted((n for n in a.module.nodes if isinstance(n, ast.Call)),
                   key=lambda n: (id(n) not in training, n.lineno, n.col_offset))
    for node in calls:  # the Trainer that trains first, then by line (the walk goes by depth)
        layout = _layout_of(a, node, aliases, flags)
        if layout is None or (training and id(node) in evaluating - training):
            continue  # a test path's Trainer beside the one that trains: not the layout the run trains with
        nodes, devices = layout
        configurable = any(v.kind in ("flag", "parameter") or (v.kind == "config" and "(not in " not in v.said)
                           for v in (nodes, devices))
        if not (nodes.fixed or devices.fixed) or (nodes.kind == "environment" and not devices.fixed):
            continue
        several = any(v.fixed and isinstance(v.count, int) and v.count > 1 for v in (nodes, devices))
        if not (intent or configurable or several or strategy_parallel(node) or section_parallel(a, node)
                or every_gpu(a, node, devices.kind == "left out")):
            continue  # no sign the script is meant to run on several GPUs or nodes (gpus=2 is one)
        stuck = [v for v in (nodes, devices) if v.fixed]
        confidence: Confidence = next((c for c in ("certain", "likely") if any(v.confidence == c for v in stuck)),
                                      "possible")
        detail = ", ".join(v.said for v in stuck)
        # the node count when certain (written in, or left out: Lightning's and Fabric's num_nodes), for feasibility.py
        certain = nodes.kind in ("literal", "left out") and nodes.said.startswith("num_nodes=")
        as_is = nodes.run_as_is and nodes.kind == "config"  # the config the script loads when given no argument
        marks = ({FLAG_DEFAULT} if any(v.kind == "flag" for v in stuck) else set()) | (
            {CLI_CONFIG} if bare_cli(a, node) else set())  # its node count is the arguments' (feasibility.py)
        yield a.finding("DDP023", node, detail, confidence=confidence,
                        fact=f"the layout is {detail}: it does not follow the nodes and GPUs the launcher starts",
                        marks=frozenset(marks | ({CONFIG_DEFAULT} if as_is else set())),
                        nodes=nodes.count if (certain or as_is) and isinstance(nodes.count, int) else None)
        return  # once per file, at the first call: one layout per script (a version branch's twin is the same)


def _used_for(a: Analysis, methods: frozenset[str]) -> set[int]:
    """The calls whose object the file calls one of ``methods`` on: the value ``trainer`` holds where
    ``trainer.fit(...)`` is called (the training ``Trainer``), or ``trainer.test(...)`` (SPECTER's test path's)."""
    out: set[int] = set()
    for node in a.module.nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in methods and (
                isinstance(node.func.value, ast.Name)):
            _, value = a.module.resolve(node.func.value.id, node.func.value)
            out.update([id(value)] if value is not None else [])
    return out


def flag_owned(finding: Finding, style: str) -> bool:
    """A DDP023 finding that only the script's flag defaults make (not certain): in front of a launch the gate's
    ``layoutflags.flag_layout_warning`` says it instead, judged against the layout asked and the flags passed (a
    per-node script's flags are ``pernodeflags.py``'s)."""
    return (finding.code == "DDP023" and finding.confidence != "certain" and FLAG_DEFAULT in finding.marks
            and style != "per-node")


def without_judged_layouts(findings: Iterable[Finding], frameworks: Sequence[Framework]) -> list[Finding]:
    """``findings`` for a layout asked: the Trainer/Fabric calls whose literal layout the planners judge
    (``spec.framework.check_layout``: a node count written in or left out, a device count written in) are theirs to
    accept or refuse, so their DDP023 findings are dropped (one judge says it)."""
    judged: set[tuple[str, int]] = set()
    for framework in frameworks:
        for layout in framework.layouts:
            where = _WHERE.match(layout.where)
            if where and (layout.num_nodes is not None or isinstance(layout.devices, int)):
                judged.add((Path(where.group(1)).name, int(where.group(2))))
    return [f for f in findings if not (f.code == "DDP023" and (Path(f.file).name, f.line) in judged)]


def _layout_of(a: Analysis, call: ast.Call, aliases: dict[str, str],
               flags: dict[str, tuple[int, str]]) -> tuple[_Value, _Value] | None:
    """(num_nodes, devices) of a Trainer/Fabric/``launch`` call; None for another call, or one whose arguments
    cannot be read (``**kwargs``)."""
    func = call.func
    made = isinstance(func, ast.Attribute) and func.attr == "from_argparse_args"
    if made and isinstance(func, ast.Attribute):
        func = func.value
    qualified = qualified_name(func, aliases) or ""
    if qualified in SPAWNERS:
        return _launch_layout(a, call, SPAWNERS[qualified], flags)
    if qualified in LIGHTNING_CLI or project_cli(a, qualified):  # the Trainer from the --config file the user passes
        section = cli_trainer(a)
        return _config_layout(a, call, section, flags) if section is not None else None
    lightning = QUALIFIED.get(qualified) == "lightning" and not made
    if lightning or (last_name(call.func) == "instantiate" and call.args):
        section = configured_trainer(a, call, lightning)
        if section is not None:
            return _config_layout(a, call, section, flags)
    spread = [k.value for k in call.keywords if k.arg is None]
    passed = spread_flags(a.module, spread[0]) if lightning and len(spread) == 1 else None
    if passed is not None:  # Trainer(**vars(args)), or of some of the flags: their defaults
        no_nodes = spread_without_nodes(a.module, spread[0]) and not _imports_node_count(a)
        return _spread_layout(a, call, passed, flags, no_nodes)
    keys = literal_keys(a.module.tree, spread[0]) if lightning and len(spread) == 1 else None
    if keys is not None and "num_nodes" not in keys | {k.arg for k in call.keywords}:
        # Trainer(..., **gpu_args) with gpu_args = dict(gpus=-1, accelerator="ddp") in each branch: no node count
        name = ast.unparse(spread[0])
        own = next((k for k in call.keywords if k.arg in ("devices", "gpus")), None)
        return (_Value(1, "left out", f"num_nodes=1 (left out: neither the call nor {name} gives it)"),
                _resolve(a, own.value, flags, str(own.arg)) if own is not None else _Value(None, "unknown"))
    if QUALIFIED.get(qualified) not in _LAYOUT_FRAMEWORKS or spread:
        return None
    if call.args and not made:
        return None
    given = {k.arg: k.value for k in call.keywords if k.arg}
    if QUALIFIED.get(qualified) == "fabric" and not made and not _LAYOUT_ARGS & set(given):
        return None  # Fabric(): the layout is left to the launcher's command line (fabric run --devices --num-nodes)
    if "num_nodes" in given:
        nodes = _resolve(a, given["num_nodes"], flags, "num_nodes")
    elif made:  # Lightning 1.x's flags (add_argparse_args): --num_nodes defaults to 1
        known = flags.get("num_nodes")  # else the parser's own (read only then: it reads the imported modules)
        plain = known is None and plain_parser(a.module.tree, call, not _imports_node_count(a, _ADDS))
        nodes = (_Value(known[0], "flag", f"num_nodes={known[0]} ({known[1]} defaults to {known[0]}: {FLAG_SAID})")
                 if known else _Value(1, "left out", "num_nodes=1 (left out: the parser from_argparse_args reads "
                                                     "has no --num_nodes)") if plain else _Value(None, "unknown"))
    else:
        nodes = _Value(1, "left out", "num_nodes=1 (left out: the default)")
    key = "devices" if "devices" in given else "gpus" if "gpus" in given else None
    flag = flags.get("devices") or flags.get("gpus") if made and not key else None  # from_argparse_args reads it
    devices = (_resolve(a, given[key], flags, key) if key else _Value("auto", "left out") if flag is None else
               _Value(flag[0], "flag", f"devices={flag[0]} ({flag[1]} defaults to {flag[0]}: {FLAG_SAID})"))
    return nodes, devices


def _config_layout(a: Analysis, call: ast.Call, section: ConfigValue,
                   flags: dict[str, tuple[int, str]]) -> tuple[_Value, _Value]:
    """A Trainer made from a config section (``Trainer(**cfg.trainer)``): the call's own arguments, else the
    section's keys, else Lightning's defaults (one node, every device)."""
    given = {k.arg: k.value for k in call.keywords if k.arg}
    data = section.value if isinstance(section.value, dict) else {}
    kind = "config" if section.agreed else "config guess"
    as_is = section.agreed and section.by_default

    def value(key: str) -> _Value | None:
        if key in given:
            return _resolve(a, given[key], flags, key)
        if key not in data:
            return None
        count = _count(data[key], key == "num_nodes")
        return _Value(count, kind, f"{_said(key)}={data[key]!r} ({shown(section, key_line(section, key))}: the "
                                   "config's default, unless overridden)", as_is)

    nodes = value("num_nodes") or _Value(1, kind, f"num_nodes=1 (not in {shown(section, section.line)}: Lightning's "
                                                  "default, unless overridden)", as_is)
    devices = value("devices") or value("gpus") or _Value("auto", "left out")
    return nodes, devices


def _imports_node_count(a: Analysis, marks: tuple[bytes, ...] = (b"num_nodes",)) -> bool:
    """Whether a project module the script imports mentions ``num_nodes`` (its ``add_argparse_args`` may declare the
    flag on the script's parser), or another of ``marks`` (``_ADDS``: what adds Lightning's Trainer flags)."""
    imported = a.project.imported(a.module) if a.project is not None else []
    return any(mark in _bytes(path) for path in imported for mark in marks)


def _bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _spread_layout(a: Analysis, call: ast.Call, passed: frozenset[str], flags: dict[str, tuple[int, str]],
                   no_nodes: bool) -> tuple[_Value, _Value]:
    """A Trainer given the script's flags (``**vars(args)``): the call's own arguments, else the defaults of the
    layout flags ``passed``; what neither sets is not known (a later ``update`` may add it) or every device, or one
    node where nothing can give the flags a node count (``no_nodes``: :func:`spread_without_nodes`)."""
    given = {k.arg: k.value for k in call.keywords if k.arg}

    def value(key: str) -> _Value | None:
        if key in given:
            return _resolve(a, given[key], flags, key)
        if key not in passed or key not in flags:
            return None
        default, option = flags[key]
        return _Value(_count(default, key == "num_nodes"), "flag",
                      f"{key}={default} ({option} defaults to {default}: {FLAG_SAID})")

    left_out = _Value(1, "left out", "num_nodes=1 (left out: the flags spread in have no --num_nodes, so Lightning's "
                                     "default stands whatever is passed)")
    return (value("num_nodes") or (left_out if no_nodes else _Value(None, "unknown")),
            value("devices") or value("gpus") or _Value("auto", "left out"))


def _launch_layout(a: Analysis, call: ast.Call, position: int,
                   flags: dict[str, tuple[int, str]]) -> tuple[_Value, _Value] | None:
    """detectron2's ``launch(main, num_gpus_per_machine, num_machines=1, ...)``."""
    if len(call.args) <= position:
        return None
    machines = next((k.value for k in call.keywords if k.arg == "num_machines"),
                    call.args[position + 1] if len(call.args) > position + 1 else None)
    nodes = (_resolve(a, machines, flags, "num_machines") if machines is not None
             else _Value(1, "left out", "num_machines=1 (left out: the default)"))
    return nodes, _resolve(a, call.args[position], flags, "num_gpus_per_machine")


def _resolve(a: Analysis, expr: ast.expr, flags: dict[str, tuple[int, str]], key: str, depth: int = 0) -> _Value:
    """Where ``expr`` (a layout argument named ``key``) comes from."""
    nodes_key = key in ("num_nodes", "num_machines")
    if _from_environment(a, expr):
        return _Value(None, "environment")
    if isinstance(expr, ast.Constant):
        count = _count(expr.value, nodes_key)
        return _Value(count, "literal", f"{_said(key)}={expr.value!r}")
    if isinstance(expr, ast.List | ast.Tuple) and not nodes_key and all(isinstance(e, ast.Constant) for e in expr.elts):
        ids = [e.value for e in expr.elts if isinstance(e, ast.Constant)]  # devices=[0, 1]: two GPUs, those ids
        return _Value(_count(ids, False), "literal", f"{_said(key)}={ids!r}")
    if depth > _DEPTH:
        return _Value(None, "unknown")
    if isinstance(expr, ast.Attribute) and expr.attr in flags and not a.module.values_anywhere(dotted(expr) or ""):
        default, option = flags[expr.attr]
        return _Value(_count(default, nodes_key), "flag",
                      f"{_said(key)}={default} ({option} defaults to {default}: {FLAG_SAID})")
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "int" and expr.args:
        return _resolve(a, expr.args[0], flags, key, depth + 1)
    if isinstance(expr, ast.Name):
        found, value = a.module.resolve(expr.id, expr)
        twin = value and twin_value(a.module.parents, value)  # the other side of an if/else: devices = args.num_gpu
        sides = [_resolve(a, v, flags, key, depth + 1) for v in (value, twin) if v]
        if sides:  # ... else: devices = "auto": the side a flag or parameter sets, if either
            return next((v for v in sides if v.kind in ("flag", "parameter")), sides[0])
        if found:
            return _parameter(a, expr, flags, key, depth)
    configured = read_config(a, expr) if isinstance(expr, ast.Attribute | ast.Subscript) else None
    count = _count(configured.value, nodes_key) if configured is not None else None
    if configured is not None and count is not None:
        return _Value(count, "config" if configured.agreed else "config guess",
                      f"{_said(key)}={configured.value!r} ({configured.where}: the config's default, unless "
                      "overridden)")
    return _Value(None, "unknown")


def _parameter(a: Analysis, name: ast.Name, flags: dict[str, tuple[int, str]], key: str, depth: int) -> _Value:
    """A parameter: what this file's calls pass for it, else its default (a CLI's flag: ``def setup(devices=8)``)."""
    function = a.module.function_of(name)
    if function is None:
        return _Value(None, "unknown")
    passed = a.module.argument_for(function, name.id)
    if passed:
        values = [_resolve(a, v, flags, key, depth + 1) for v in passed]
        return values[0] if len({v.count for v in values}) == 1 and values[0].fixed else _Value(None, "unknown")
    params = [*function.args.posonlyargs, *function.args.args]
    defaults = dict(zip([p.arg for p in params[len(params) - len(function.args.defaults):]], function.args.defaults,
                        strict=True))
    defaults.update({p.arg: d for p, d in zip(function.args.kwonlyargs, function.args.kw_defaults, strict=True)
                     if d is not None})
    default = defaults.get(name.id)
    if not isinstance(default, ast.Constant):
        return _Value(None, "unknown")
    count = _count(default.value, key in ("num_nodes", "num_machines"))
    return _Value(count, "parameter", f"{_said(key)}={default.value!r} ({function.name}'s {name.id} defaults to "
                                      f"{default.value!r}: a parameter's default)")


def _count(value: object, nodes: bool) -> int | str | None:
    """A node count (a positive int) or a device count (``devices_of``: a count, a list of ids, "auto")."""
    return (value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None) if nodes else (
        devices_of(value))


def _said(key: str) -> str:
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


def _flags(a: Analysis) -> dict[str, tuple[int, str]]:
    """The integer flag defaults of this file and of the project helpers its calls reach (a parser built in
    ``utils.py``), and an installed package's parser's (:data:`_PACKAGE_PARSERS`): ``{"num_nodes": (1,
    "--num_nodes")}``. Only the modules the doctor reads anyway (reading another would check it as a helper)."""
    trees = [a.module.tree]
    if a.project is not None:
        list(a.helper_quals)  # reads the helpers the file's calls reach
        trees += [m.tree for _, m in a.project.helpers()]
    found: dict[str, tuple[int, str]] = {}
    aliases = import_aliases(a.module.tree)
    for node in a.module.nodes:
        if isinstance(node, ast.Call):
            found.update(_PACKAGE_PARSERS.get(qualified_name(node.func, aliases) or "", {}))
    for tree in trees:
        for name, (default, option) in declared_layout_flags(tree).items():
            found.setdefault(name, (default, option))
    return found
