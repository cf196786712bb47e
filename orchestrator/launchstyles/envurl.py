"""A launcher's world read only where the user asks for it: ImageNet-style code reads ``WORLD_SIZE`` under ``if
args.dist_url == "env://" and args.world_size == -1:``. Where the project declares ``--dist-url`` with another
default (SFA3D's ``tcp://127.0.0.1:29500``, the ImageNet example's ``tcp://224.66.41.62:23456``), that read runs
only when the user passes ``--dist-url env://``: as the script is started by default, its branch outside the
``--multiprocessing-distributed`` spawn never learns a launcher's world. ``spawns.py`` then takes the spawn for the
way the script trains on several GPUs (a ``per-node`` script). A flag whose default is ``env://`` itself, or one the
project does not declare (its default unknown), is no such opt-in.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from orchestrator.source.argflags import declared_flags
from orchestrator.source.walk import walk

ENV_URL = "env://"


def url_defaults(trees: list[ast.Module]) -> dict[str, str]:
    """The string defaults of the flags the trees declare, by the attribute argparse stores them under (``--dist-url``
    is ``dist_url``; a ``dest=`` wins)."""
    found: dict[str, str] = {}
    for tree in trees:
        for flag in declared_flags(tree):
            default = flag.keywords.get("default")
            if not (isinstance(default, ast.Constant) and isinstance(default.value, str)):
                continue
            dest = flag.keywords.get("dest")
            if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
                found[dest.value] = default.value
                continue
            long = next((o for o in flag.options if o.startswith("--")), None)
            if long is not None:
                found[long[2:].replace("-", "_")] = default.value
    return found


def opt_in_env(test: ast.expr, defaults: dict[str, str]) -> bool:
    """``test`` holds ``args.dist_url == "env://"`` for a flag whose default is another URL: true only when the user
    passes the flag."""
    for node in walk(test):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)):
            continue
        sides = (node.left, node.comparators[0])
        if not any(isinstance(s, ast.Constant) and s.value == ENV_URL for s in sides):
            continue
        flag = next((s for s in sides if isinstance(s, ast.Attribute)), None)
        if flag is not None and flag.attr in defaults and defaults[flag.attr] != ENV_URL:
            return True
    return False


def ungated_reads(tree: ast.Module, names: frozenset[str], defaults: dict[str, str]) -> Iterator[ast.Constant]:
    """The string constants of ``names`` in ``tree`` (``"WORLD_SIZE"``) that sit under no ``if`` whose test only a
    passed ``--dist-url env://`` makes true (``opt_in_env``), on the side that test opens."""

    def visit(node: ast.AST, gated: bool) -> Iterator[ast.Constant]:
        if isinstance(node, ast.Constant) and node.value in names and not gated:
            yield node
        for child in ast.iter_child_nodes(node):
            inner = gated or (isinstance(node, ast.If) and child in node.body and opt_in_env(node.test, defaults))
            yield from visit(child, inner)

    yield from visit(tree, False)
