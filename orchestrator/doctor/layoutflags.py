"""A Lightning ``Trainer``/``Fabric`` whose ``num_nodes`` or ``devices`` come from the script's own flag
(``Trainer(num_nodes=args.num_nodes)`` with ``--num_nodes`` defaulting to 1): the flag's default is the layout
unless the user passes the flag. Where it does not match the layout asked (``orch submit --nodes 2``: two nodes,
the default one) the framework stops when training starts (devices x num_nodes must be the world size), after the
queue wait. The gate (``gate.check_script``) prints :func:`flag_layout_warning` with the exact ``-- ...`` to pass;
silent once the flags are passed after ``--`` with the layout's values.

A warning, not a refusal: the default may be replaced where this reading does not look (a config file merged
into the flags). Literal layouts are judged by the planners (``spec.framework.check_layout``); a per-node
script's are not judged (its task is not a rank).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.doctor.frameworknames import QUALIFIED, import_aliases, qualified_name
from orchestrator.source.argflags import declared_flags
from orchestrator.source.exprnames import last_name
from orchestrator.source.names import Module
from orchestrator.source.walk import walk

_LAYOUT_FRAMEWORKS = frozenset({"lightning", "fabric"})
# what adds Lightning's Trainer flags (--num_nodes among them) to a parser, besides Trainer.add_argparse_args
TRAINER_FLAG_ADDERS = frozenset({"LightningArgumentParser", "add_trainer_args"})


@dataclass(frozen=True)
class _Flag:
    options: tuple[str, ...]  # every spelling it declares: ("--num_nodes",)
    default: int


def flag_layout_warning(path: Path, style: str, nodes: int, gpus: int | None, args: Sequence[str]) -> str | None:
    """The warning (with its HINT) for a Trainer/Fabric layout taken from flags whose values (the defaults, or
    what ``args`` pass) do not match ``nodes`` x ``gpus`` (``gpus``: each node's ranks, None when not known);
    None otherwise, or when the script cannot be read."""
    if style == "per-node":
        return None
    from orchestrator.source.projectfiles import project_files  # the doctor's reading, only when asked

    sources = project_files(path)
    flags: dict[str, _Flag] = {}
    for source in sources:
        flags.update(_declared(source.tree))
    wanted = {"num_nodes": nodes, "devices": gpus}
    for source in sources:
        aliases = import_aliases(source.tree)
        for node in walk(source.tree):
            func = node.func if isinstance(node, ast.Call) else None
            made = isinstance(func, ast.Attribute) and func.attr == "from_argparse_args"
            if isinstance(func, ast.Attribute) and made:
                func = func.value  # Trainer.from_argparse_args(args): its layout from Lightning's own flags
            if not (isinstance(node, ast.Call) and func is not None
                    and QUALIFIED.get(qualified_name(func, aliases) or "") in _LAYOUT_FRAMEWORKS):
                continue
            keywords = list(node.keywords)
            if made and "num_nodes" in flags and all(k.arg != "num_nodes" for k in keywords):
                keywords.append(ast.keyword("num_nodes", ast.Attribute(ast.Name("args"), "num_nodes")))
            passes: list[str] = []
            said: list[str] = []
            for keyword in keywords:
                want = wanted.get(keyword.arg or "")
                flag = flags.get(keyword.value.attr) if isinstance(keyword.value, ast.Attribute) else None
                if want is None or flag is None or _value(args, flag) == want:
                    continue
                passes.append(f"{flag.options[0]} {want}")
                said.append(_said(args, flag))
            if passes:
                return (f"orch: warning: {source.quote(node.lineno)}: the layout comes from the script's flags "
                        f"({', '.join(said)}), which do not match the {nodes} node(s) x {gpus or '?'} rank(s) asked: "
                        "the framework stops when training starts (devices x num_nodes must be the world size)\n"
                        f"HINT: pass the flags after --: -- {' '.join(passes)}")
    return None


def _said(args: Sequence[str], flag: _Flag) -> str:
    given = _given(args, flag)
    return f"{flag.options[0]} {given}" if given is not None else f"{flag.options[0]} defaults to {flag.default}"


def _value(args: Sequence[str], flag: _Flag) -> int | None:
    """The flag's value: as passed in ``args`` (None when not a number), else its default."""
    given = _given(args, flag)
    if given is None:
        return flag.default
    try:
        return int(given)
    except ValueError:
        return None


def _given(args: Sequence[str], flag: _Flag) -> str | None:
    for i, arg in enumerate(args):
        if arg in flag.options and i + 1 < len(args):
            return args[i + 1]
        name, eq, value = arg.partition("=")
        if eq and name in flag.options:
            return value
    return None


def declared_layout_flags(tree: ast.Module) -> dict[str, tuple[int, str]]:
    """The integer flag defaults of ``tree`` by the attribute they set: ``{"num_nodes": (1, "--num_nodes")}``
    (DDP023 reads a layout fixed by them, ``rules_layout.py``)."""
    return {name: (flag.default, flag.options[0]) for name, flag in _declared(tree).items()}


def _declared(tree: ast.Module) -> dict[str, _Flag]:
    """``add_argument("--num_nodes", type=int, default=1)`` -> ``{"num_nodes": _Flag(("--num_nodes",), 1)}``: the
    flags with an integer default, by the attribute they set."""
    found: dict[str, _Flag] = {}
    for flag in declared_flags(tree):
        default = flag.keywords.get("default")
        if not (isinstance(default, ast.Constant) and type(default.value) is int):
            continue
        found[flag.attribute] = _Flag(flag.longs, int(default.value))
    if any(_adds_trainer_flags(node) for node in walk(tree)):
        found.setdefault("num_nodes", _Flag(("--num_nodes",), 1))  # Lightning 1.x's Trainer flags: --num_nodes 1
    return found


_SPREAD_NAMES = frozenset({"num_nodes", "gpus", "devices"})  # the layout flags a spread of the flags can pass


def spread_flags(module: Module, expr: ast.expr) -> frozenset[str] | None:
    """The layout flags a ``Trainer(**x)`` spread passes (None: ``x`` is not the flags): ``vars(args)`` passes
    every one; ``{k: v for k, v in vars(args).items() if k in names}`` those of ``names`` (a list in the file)."""
    if isinstance(expr, ast.Name):
        expr = module.resolve(expr.id, expr)[1] or expr
    if _vars(expr):
        return _SPREAD_NAMES
    if not (isinstance(expr, ast.DictComp) and len(expr.generators) == 1):
        return None
    loop = expr.generators[0]
    items = loop.iter
    if not (isinstance(items, ast.Call) and isinstance(items.func, ast.Attribute) and items.func.attr == "items"
            and _vars(items.func.value)):
        return None
    passed = _SPREAD_NAMES
    for test in loop.ifs:
        listed = _strings(module, test.comparators[0]) if isinstance(test, ast.Compare) and len(test.ops) == 1 and (
            isinstance(test.ops[0], ast.In)) else None
        if listed is None:
            return None
        passed &= listed
    return passed


def _vars(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "vars" and (
        len(expr.args) == 1)


def _strings(module: Module, expr: ast.expr) -> frozenset[str] | None:
    """The strings of a list, tuple or set written in (through a name), or None."""
    if isinstance(expr, ast.Name):
        expr = module.resolve(expr.id, expr)[1] or expr
    if not isinstance(expr, ast.List | ast.Tuple | ast.Set):
        return None
    return frozenset(e.value for e in expr.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))


def literal_keys(tree: ast.Module, expr: ast.expr) -> frozenset[str] | None:
    """The keys a dict spread into a call (``**gpu_args``) can hold: every assignment of the name in the file is a
    ``dict(k=...)`` or ``{"k": ...}`` with the keys written out, and nothing adds another (a store under a key not
    written out, ``update``/``setdefault``); None when not known."""
    if not isinstance(expr, ast.Name):
        return None
    keys: set[str] = set()
    made = False
    for node in walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None and any(  # also annotated:
                isinstance(t, ast.Name) and t.id == expr.id  # ``kwargs: Dict[str, Any] = dict(...)``
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])):
            value = node.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict" and (
                    not value.args and all(k.arg for k in value.keywords)):
                keys.update(str(k.arg) for k in value.keywords)
            elif isinstance(value, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                                      for k in value.keys):
                keys.update(str(k.value) for k in value.keys if isinstance(k, ast.Constant))
            else:
                return None
            made = True
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == expr.id and (
                isinstance(node.ctx, ast.Store)):
            if not (isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
                return None
            keys.add(node.slice.value)
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == expr.id
              and node.attr in ("update", "setdefault", "__setitem__")) or (
                isinstance(node, ast.AugAssign | ast.AnnAssign) and isinstance(node.target, ast.Name)
                and node.target.id == expr.id):
            return None
    return frozenset(keys) if made else None


def _adds_trainer_flags(node: ast.AST) -> bool:
    """``Trainer.add_argparse_args(parser)`` (``pl.Trainer``, a ``...Trainer`` class): Lightning 1.x's Trainer flags,
    ``--num_nodes`` among them. A model's or a data module's own ``add_argparse_args`` adds its flags only."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
        node.func.attr == "add_argparse_args") and (last_name(node.func.value) or "").endswith("Trainer")


def _mentions_nodes(tree: ast.Module) -> bool:
    """Whether anything in the file may give a namespace a node count: Lightning's Trainer flags added
    (``Trainer.add_argparse_args``, ``LightningArgumentParser``, ``add_trainer_args``), or ``num_nodes`` anywhere (a
    flag, an attribute set, a keyword, a string)."""
    return any(
        _adds_trainer_flags(n) or (isinstance(n, ast.Attribute) and n.attr in TRAINER_FLAG_ADDERS | {"num_nodes"})
        or (isinstance(n, ast.Name) and n.id in TRAINER_FLAG_ADDERS | {"num_nodes"})
        or (isinstance(n, ast.keyword) and n.arg == "num_nodes")
        or (isinstance(n, ast.Constant) and isinstance(n.value, str) and "num_nodes" in n.value)
        for n in walk(tree))


def _assignments(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """Every value assigned to a name in the file (``a, b = call()``: the call for each)."""
    assigned: dict[str, list[ast.expr]] = {}
    for node in walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            for name in names:
                if isinstance(name, ast.Name):
                    assigned.setdefault(name.id, []).append(node.value)
    return assigned


def _plain_parsers(assigned: dict[str, list[ast.expr]], handed: bool = False) -> frozenset[str]:
    """The names bound only to an ``ArgumentParser(...)`` with no ``parents`` (with ``handed``, also to a call handed
    that name back: ``parser = HiVT.add_model_specific_args(parser)``, where the project adds no Trainer flags)."""
    def new(v: ast.expr) -> bool:
        return isinstance(v, ast.Call) and last_name(v.func) == "ArgumentParser" and not any(
            k.arg == "parents" for k in v.keywords)
    return frozenset(name for name, values in assigned.items() if any(new(v) for v in values) and all(
        new(v) or (handed and isinstance(v, ast.Call) and any(isinstance(x, ast.Name) and x.id == name
                                                              for x in v.args)) for v in values))


def plain_parser(tree: ast.Module, call: ast.Call, handed: bool = False) -> bool:
    """``Trainer.from_argparse_args(args, ...)`` where ``args`` is parsed in this file by an ``ArgumentParser`` built
    here, and nothing in the file adds Lightning's Trainer flags or a node count (:func:`_mentions_nodes`): the
    namespace has no ``num_nodes``, so Lightning's default (one node) stands, whatever the user passes."""
    if not (call.args and isinstance(call.args[0], ast.Name)) or _mentions_nodes(tree):
        return False
    assigned = _assignments(tree)
    parsed = assigned.get(call.args[0].id, [])
    parsers = [v.func.value.id for v in parsed if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
               and v.func.attr == "parse_args" and isinstance(v.func.value, ast.Name)]
    return len(parsers) == len(parsed) == 1 and parsers[0] in _plain_parsers(assigned, handed)


def spread_without_nodes(module: Module, expr: ast.expr) -> bool:
    """``Trainer(**vars(args))`` (or of a part of it: ``vars(groups["Trainer"])``) where ``args`` comes from an
    ``ArgumentParser`` built in this file (parsed by it, or made by a call it is handed to) and nothing in the file
    adds Lightning's Trainer flags or a node count: the spread has no ``num_nodes``, so Lightning's default (one
    node) stands, whatever the user passes."""
    if isinstance(expr, ast.Name):
        expr = module.resolve(expr.id, expr)[1] or expr
    if not (isinstance(expr, ast.Call) and _vars(expr)) or _mentions_nodes(module.tree):
        return False
    root = expr.args[0]
    while isinstance(root, ast.Attribute | ast.Subscript):
        root = root.value
    if not isinstance(root, ast.Name):
        return False
    assigned = _assignments(module.tree)
    parsers = _plain_parsers(assigned)

    def from_parser(value: ast.expr) -> bool:
        if not isinstance(value, ast.Call):
            return False
        handed = {a.id for a in value.args if isinstance(a, ast.Name)}
        if isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name) and (
                value.func.attr in ("parse_args", "parse_known_args")):
            handed.add(value.func.value.id)
        return bool(handed & parsers)

    values = assigned.get(root.id, [])
    return bool(values) and all(from_parser(v) for v in values)
