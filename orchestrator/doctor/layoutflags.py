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
from orchestrator.source.names import Module
from orchestrator.source.walk import walk

_LAYOUT_FRAMEWORKS = frozenset({"lightning", "fabric"})


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
        dest = flag.keywords.get("dest")
        longs = [o for o in flag.options if o.startswith("--")] or list(flag.options)
        name = dest.value if isinstance(dest, ast.Constant) and isinstance(dest.value, str) else (
            longs[0].lstrip("-").replace("-", "_"))
        found[name] = _Flag(tuple(longs), int(default.value))
    if any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
           and node.func.attr == "add_argparse_args" for node in walk(tree)):
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
