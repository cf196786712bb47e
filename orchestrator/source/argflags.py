"""The command-line flags a module declares with argparse: each ``add_argument`` call's option strings and keywords.

One reading for every rule that asks what a script's flags are (the node count, the devices, a layout's flags):
``parser.add_argument("--num_nodes", "-n", type=int, default=1)`` is ``Declared(options=("--num_nodes", "-n"),
keywords={"type": <Name int>, "default": <Constant 1>})``. Positional arguments (no leading ``-``) are not flags.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from orchestrator.source.walk import walk
from orchestrator.spec.launch import LOCAL_RANK_FLAGS


@dataclass(frozen=True)
class Declared:
    """One ``add_argument`` call that declares a flag."""

    node: ast.Call
    options: tuple[str, ...]  # its option strings, in the call's order ("--num_nodes", "-n")
    keywords: dict[str, ast.expr]  # its keyword arguments by name (default, type, dest, ...)

    @property
    def longs(self) -> tuple[str, ...]:
        """Its long options (``--num_nodes``), else every option: argparse names the attribute by the first."""
        return tuple(o for o in self.options if o.startswith("--")) or self.options

    @property
    def attribute(self) -> str:
        """The attribute argparse sets (``args.<attribute>``): ``dest=`` written in, else the first long option
        without its dashes, inner ones as underscores (``-d, --num-devices`` -> ``num_devices``)."""
        dest = self.keywords.get("dest")
        if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
            return dest.value
        return self.longs[0].lstrip("-").replace("-", "_")

    @property
    def long_names(self) -> frozenset[str]:
        """What each long option would name as the attribute (``--num-devices`` -> ``num_devices``)."""
        return frozenset(o.lstrip("-").replace("-", "_") for o in self.options if o.startswith("--"))


def declared_flags(tree: ast.AST) -> Iterator[Declared]:
    """Every ``add_argument`` call below ``tree`` with at least one option string, in ``ast.walk`` order (also
    through a name bound to it: ``arg = parser.add_argument; arg("-c", "--config")``)."""
    adders = frozenset(target.id for node in walk(tree) if isinstance(node, ast.Assign)
                       and isinstance(node.value, ast.Attribute) and node.value.attr == "add_argument"
                       for target in node.targets if isinstance(target, ast.Name))
    for node in walk(tree):
        if isinstance(node, ast.Call) and (flag := declared(node, adders)) is not None:
            yield flag


def declared(node: ast.Call, adders: frozenset[str] = frozenset()) -> Declared | None:
    """The flag an ``add_argument`` call (or a call of one of ``adders``, names bound to it) declares; None for
    another call or a positional argument."""
    func = node.func
    if not ((isinstance(func, ast.Attribute) and func.attr == "add_argument")
            or (isinstance(func, ast.Name) and func.id in adders)):
        return None
    options = tuple(a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                    and a.value.startswith("-"))
    return Declared(node, options, {k.arg: k.value for k in node.keywords if k.arg}) if options else None


def attribute_read(trees: Iterable[ast.AST], attribute: str) -> bool:
    """Some module of ``trees`` reads the flag's ``attribute`` (``args.init_method``; the name as a string:
    ``getattr(args, "init_method")``, ``cfg["init_method"]``; or a parameter or name of that name, which
    ``main(**vars(args))`` fills)."""
    return any((isinstance(node, ast.Attribute | ast.Name) and isinstance(node.ctx, ast.Load)
                and (node.attr if isinstance(node, ast.Attribute) else node.id) == attribute)
               or (isinstance(node, ast.arg) and node.arg == attribute)
               or (isinstance(node, ast.Constant) and node.value == attribute)
               for tree in trees for node in walk(tree))


def local_rank_flags(tree: ast.AST) -> frozenset[str]:
    """The attributes argparse fills from a legacy ``--local_rank``/``--local-rank`` flag ``tree`` declares."""
    return frozenset(flag.attribute for flag in declared_flags(tree) if set(flag.options) & set(LOCAL_RANK_FLAGS))


def local_rank_attributes(tree: ast.AST) -> frozenset[str]:
    """The attributes argparse fills from the legacy ``--local_rank``/``--local-rank`` flag, where ``tree`` declares
    it under another first name too (ParallelWaveGAN's ``add_argument("--rank", "--local_rank")`` fills ``args.rank``
    with the node-local rank torch.distributed.launch passes); ``local_rank`` itself says so by its name."""
    return local_rank_flags(tree) - {"local_rank"}
