"""DDP023: a framework layout that cannot follow the launcher.

Lightning's ``Trainer(...)``, Fabric's ``Fabric(...)`` (also ``Trainer.from_argparse_args(args)``) and
detectron2's ``launch(main, num_gpus_per_machine, num_machines=...)`` fix how many nodes and devices the run has.
Under a launcher that starts several GPUs per node or several nodes, Lightning and Fabric check devices x num_nodes
against ``WORLD_SIZE`` and stop at start-up (after the queue wait), and detectron2's ``launch`` starts only its own
count. The layout is stuck when ``num_nodes`` (or ``num_machines``) is a fixed value, or ``devices``/``gpus`` a
fixed count: written in the call, left out (``num_nodes`` defaults to 1), a flag's default or a parameter's default
(a ``CLI(setup)`` whose ``devices: int = 8`` is the flag). Not stuck: ``devices="auto"``/``-1`` and a ``num_nodes``
read from the environment (``SLURM_NNODES``, ``WORLD_SIZE // LOCAL_WORLD_SIZE``) or computed.

A ``LightningCLI``'s Trainer takes its layout from the ``--config`` file passed (``layoutconfig.cli_trainer``), else
its own ``trainer_defaults`` (a dict literal: point2vec's ``{"devices": 1}``), else Lightning's defaults; the
command line may override the last two, so across nodes only the arguments' count refuses it (``CLI_ARGS``).

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
from dataclasses import replace
from pathlib import Path

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.argsconfig import CLI_ARGS, args_config, parallel_options
from orchestrator.doctor.confidence import Confidence
from orchestrator.doctor.findings import ArgsConfig, Finding
from orchestrator.doctor.frameworknames import LIGHTNING_CLI, QUALIFIED, import_aliases, qualified_name
from orchestrator.doctor.hydratargets import CONFIG_BUILDERS
from orchestrator.doctor.layoutconfig import (
    LAYOUT_KEYS,
    bare_cli,
    cli_defaults,
    cli_trainer,
    configured_trainer,
    key_line,
    project_cli,
    section_every_gpu,
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
from orchestrator.doctor.layoutvalues import FLAG_SAID, LayoutValue, layout_count, resolve_layout, said_key
from orchestrator.launchstyles.installed import SPAWNERS
from orchestrator.source.configfiles import ConfigValue
from orchestrator.source.exprnames import dotted, last_name
from orchestrator.spec.framework import Framework

_ADDS = (b"--num_nodes", b"--num-nodes", b"add_argparse_args", *(name.encode() for name in TRAINER_FLAG_ADDERS))
FLAG_DEFAULT = "a flag's default fixes the layout"  # the finding's mark then (flag_owned reads it)
# the mark of a node count from the config the script loads with no argument (feasibility.py refuses it across nodes)
CONFIG_DEFAULT = "the config the script loads with no argument fixes the node count"
_LAYOUT_FRAMEWORKS = frozenset({"lightning", "fabric"})
# a LightningCLI whose own defaults set no layout: its arguments' count where they give one (a --config file's, an
# override), else not known (the user passes --trainer.num_nodes as a flag)
_CLI_UNSET = replace(CLI_ARGS, unnamed=None)
_WHERE = re.compile(r"^(.*?):(\d+)(?::|$)")  # a Layout's where: "train.py:40: Trainer(...)"
_LAYOUT_ARGS = frozenset({"devices", "gpus", "num_nodes", "strategy", "accelerator"})
# installed packages' argument parsers -> the layout flags they declare, with their defaults (the package is not read)
_PACKAGE_PARSERS: dict[str, dict[str, tuple[int, str]]] = {
    f"{package}.engine{module}.default_argument_parser": {"num_gpus": (1, "--num-gpus"),
                                                          "num_machines": (1, "--num-machines")}
    for package in ("detectron2", "fastreid") for module in ("", ".defaults")
}


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
                or every_gpu(a, node, devices.kind == "left out") or section_every_gpu(a, node)):
            options = parallel_options(nodes.args) if nodes.args is not None else []
            if options:  # a Hydra app's default runs one process; a command line may choose a parallel option
                yield _option_layout(a, node, nodes, options)
                return
            continue  # no sign the script is meant to run on several GPUs or nodes (gpus=2 is one)
        stuck = [v for v in (nodes, devices) if v.fixed]
        confidence: Confidence = next((c for c in ("certain", "likely") if any(v.confidence == c for v in stuck)),
                                      "possible")
        detail = ", ".join(v.said for v in stuck)
        # the node count when certain (written in, or left out: Lightning's and Fabric's num_nodes), for feasibility.py
        certain = nodes.kind in ("literal", "left out") and nodes.said.startswith("num_nodes=")
        as_is = nodes.run_as_is and nodes.kind == "config"  # the config the script loads when given no argument
        marks = {FLAG_DEFAULT} if any(v.kind == "flag" for v in stuck) else set()
        yield a.finding("DDP023", node, detail, confidence=confidence,
                        fact=f"the layout is {detail}: it does not follow the nodes and GPUs the launcher starts",
                        marks=frozenset(marks | ({CONFIG_DEFAULT} if as_is else set())),
                        nodes=nodes.count if (certain or as_is) and isinstance(nodes.count, int) else None,
                        # the arguments' count instead (a bare CLI's: Lightning's 1 where they name no file)
                        args_config=CLI_ARGS if bare_cli(a, node) and nodes.args is not _CLI_UNSET else nodes.args)
        return  # once per file, at the first call: one layout per script (a version branch's twin is the same)


def _option_layout(a: Analysis, node: ast.Call, nodes: LayoutValue, options: list[str]) -> Finding:
    """DDP023, possible: a Hydra app whose default Trainer section runs one process, with group options that run
    several (``trainer=ddp``): its node count is then the option's (Lightning's 1 where left out), which the
    arguments ``orch submit`` passes decide (``argsconfig.node_count``, only where the composed section runs several
    processes)."""
    assert nodes.args is not None
    group = nodes.args.keys[0]
    chosen = ", ".join(f"{group}={o}" for o in options[:3]) + (", ..." if len(options) > 3 else "")
    detail = f"{nodes.said}; a parallel option chosen on the command line ({chosen}) keeps that node count"
    return a.finding("DDP023", node, detail, confidence="possible",
                     fact=f"the layout is {detail}: it does not follow the nodes the launcher starts",
                     args_config=replace(nodes.args, parallel=True))


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
               flags: dict[str, tuple[int, str]]) -> tuple[LayoutValue, LayoutValue] | None:
    """(num_nodes, devices) of a Trainer/Fabric/``launch`` call; None for another call, or one whose arguments
    cannot be read (``**kwargs``)."""
    func = call.func
    made = isinstance(func, ast.Attribute) and func.attr == "from_argparse_args"
    if made and isinstance(func, ast.Attribute):
        func = func.value
    qualified = qualified_name(func, aliases) or ""
    if qualified in SPAWNERS:
        return _launch_layout(a, call, SPAWNERS[qualified], flags)
    # the Trainer of a LightningCLI (or of the project's or the file's subclass): from the --config file the user passes
    if qualified in LIGHTNING_CLI or project_cli(a, qualified or dotted(call.func) or ""):
        section = cli_trainer(a)
        if section is not None:
            return _config_layout(a, call, section, flags)
        # its own defaults set no layout: Lightning's one node, unless the arguments say (a flag's default: refused
        # across nodes only where the arguments give another count, as a flag's default is)
        unset = cli_defaults(a, call)
        return (LayoutValue(1, "config", f"num_nodes=1 (Lightning's default: {unset} set none, unless "
                                         "--trainer.num_nodes or a --config file does)", False, _CLI_UNSET),
                LayoutValue("auto", "left out")) if unset is not None else _cli_defaults_layout(a, call, flags)
    lightning = QUALIFIED.get(qualified) == "lightning" and not made
    spreads = QUALIFIED.get(qualified) in _LAYOUT_FRAMEWORKS and not made  # Fabric(**config.lightning) too
    if spreads or (last_name(call.func) in CONFIG_BUILDERS and call.args):
        section = configured_trainer(a, call, spreads)
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
        return (LayoutValue(1, "left out", f"num_nodes=1 (left out: neither the call nor {name} gives it)"),
                resolve_layout(a, own.value, flags, str(own.arg)) if own is not None else LayoutValue(
                    "auto", "left out") if not {"devices", "gpus"} & keys else LayoutValue(None, "unknown"))
    if QUALIFIED.get(qualified) not in _LAYOUT_FRAMEWORKS or spread:
        return None
    if call.args and not made:
        return None
    given = {k.arg: k.value for k in call.keywords if k.arg}
    if QUALIFIED.get(qualified) == "fabric" and not made and not _LAYOUT_ARGS & set(given):
        return None  # Fabric(): the layout is left to the launcher's command line (fabric run --devices --num-nodes)
    if "num_nodes" in given:
        nodes = resolve_layout(a, given["num_nodes"], flags, "num_nodes")
    elif made:  # Lightning 1.x's flags (add_argparse_args): --num_nodes defaults to 1
        known = flags.get("num_nodes")  # else the parser's own (read only then: it reads the imported modules)
        plain = known is None and plain_parser(a.module.tree, call, not _imports_node_count(a, _ADDS))
        nodes = (LayoutValue(known[0], "flag", f"num_nodes={known[0]} ({known[1]} defaults to {known[0]}: {FLAG_SAID})")
                 if known else LayoutValue(1, "left out", "num_nodes=1 (left out: the parser from_argparse_args reads "
                                                     "has no --num_nodes)") if plain else LayoutValue(None, "unknown"))
    else:
        nodes = LayoutValue(1, "left out", "num_nodes=1 (left out: the default)")
    key = "devices" if "devices" in given else "gpus" if "gpus" in given else None
    flag = flags.get("devices") or flags.get("gpus") if made and not key else None  # from_argparse_args reads it
    devices = (resolve_layout(a, given[key], flags, key) if key else LayoutValue("auto", "left out") if flag is None
               else LayoutValue(flag[0], "flag", f"devices={flag[0]} ({flag[1]} defaults to {flag[0]}: {FLAG_SAID})"))
    return nodes, devices


def _cli_defaults_layout(a: Analysis, call: ast.Call,
                         flags: dict[str, tuple[int, str]]) -> tuple[LayoutValue, LayoutValue] | None:
    """A ``LightningCLI`` whose own ``trainer_defaults`` (a dict literal; no default config files, ``args`` or
    ``env_parse``) set a layout (point2vec's ``{"devices": 1}``): those values, and Lightning's one node where they
    leave ``num_nodes`` out, each unless ``--trainer.num_nodes``/``--trainer.devices`` or a ``--config`` file says
    otherwise (as a bare CLI's: refused across nodes only where the arguments give another count)."""
    given = {k.arg: k.value for k in call.keywords}
    defaults = given.get("trainer_defaults")
    if None in given or {"args", "env_parse", "parser_kwargs"} & given.keys() or not isinstance(defaults, ast.Dict):
        return None
    entries = {k.value: v for k, v in zip(defaults.keys, defaults.values, strict=True) if isinstance(k, ast.Constant)}
    if len(entries) != len(defaults.keys) or not LAYOUT_KEYS & entries.keys():
        return None
    unless = "unless --trainer.num_nodes or a --config file does"
    if "num_nodes" in entries:
        read = resolve_layout(a, entries["num_nodes"], flags, "num_nodes")
        nodes = LayoutValue(read.count, "config", f"{read.said} (trainer_defaults, {unless})", False, _CLI_UNSET)
    else:
        nodes = LayoutValue(1, "config", f"num_nodes=1 (Lightning's default: trainer_defaults set none, {unless})",
                            False, _CLI_UNSET)
    key = next((k for k in ("devices", "gpus") if k in entries), None)
    own = resolve_layout(a, entries[key], flags, key) if key is not None else None
    devices = LayoutValue(own.count, "config", f"{own.said} (trainer_defaults)") if own is not None else (
        LayoutValue("auto", "left out"))
    return nodes, devices


def _config_layout(a: Analysis, call: ast.Call, section: ConfigValue,
                   flags: dict[str, tuple[int, str]]) -> tuple[LayoutValue, LayoutValue]:
    """A Trainer made from a config section (``Trainer(**cfg.trainer)``): the call's own arguments, else the
    section's keys, else Lightning's defaults (one node, every device)."""
    given = {k.arg: k.value for k in call.keywords if k.arg}
    data = section.value if isinstance(section.value, dict) else {}
    kind = "config" if section.agreed else "config guess"
    as_is = section.agreed and section.by_default

    def value(key: str) -> LayoutValue | None:
        if key in given:
            return resolve_layout(a, given[key], flags, key)
        if key not in data:
            return None
        count = layout_count(data[key], key == "num_nodes")
        return LayoutValue(count, kind, f"{said_key(key)}={data[key]!r} ({shown(section, key_line(section, key))}: the "
                                        "config's default, unless overridden)", as_is,
                           passed(count) if key == "num_nodes" else None)

    def passed(count: object) -> ArgsConfig | None:  # the count the arguments give instead (Lightning's 1 left out)
        return args_config(a, section, (*section.keys, "num_nodes"), 1, count if as_is and isinstance(count, int)
                           else None)

    nodes = value("num_nodes") or LayoutValue(1, kind, f"num_nodes=1 (not in {shown(section, section.line)}: "
                                                       "Lightning's default, unless overridden)", as_is, passed(1))
    devices = value("devices") or value("gpus") or LayoutValue("auto", "left out")
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
                   no_nodes: bool) -> tuple[LayoutValue, LayoutValue]:
    """A Trainer given the script's flags (``**vars(args)``): the call's own arguments, else the defaults of the
    layout flags ``passed``; what neither sets is not known (a later ``update`` may add it) or every device, or one
    node where nothing can give the flags a node count (``no_nodes``: :func:`spread_without_nodes`)."""
    given = {k.arg: k.value for k in call.keywords if k.arg}

    def value(key: str) -> LayoutValue | None:
        if key in given:
            return resolve_layout(a, given[key], flags, key)
        if key not in passed or key not in flags:
            return None
        default, option = flags[key]
        return LayoutValue(layout_count(default, key == "num_nodes"), "flag",
                      f"{key}={default} ({option} defaults to {default}: {FLAG_SAID})")

    left_out = LayoutValue(1, "left out", "num_nodes=1 (left out: the flags spread in have no --num_nodes, so "
                                          "Lightning's default stands whatever is passed)")
    return (value("num_nodes") or (left_out if no_nodes else LayoutValue(None, "unknown")),
            value("devices") or value("gpus") or LayoutValue("auto", "left out"))


def _launch_layout(a: Analysis, call: ast.Call, position: int,
                   flags: dict[str, tuple[int, str]]) -> tuple[LayoutValue, LayoutValue] | None:
    """detectron2's ``launch(main, num_gpus_per_machine, num_machines=1, ...)``."""
    if len(call.args) <= position:
        return None
    machines = next((k.value for k in call.keywords if k.arg == "num_machines"),
                    call.args[position + 1] if len(call.args) > position + 1 else None)
    nodes = (resolve_layout(a, machines, flags, "num_machines") if machines is not None
             else LayoutValue(1, "left out", "num_machines=1 (left out: the default)"))
    return nodes, resolve_layout(a, call.args[position], flags, "num_gpus_per_machine")


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
