"""Folders a script adds to ``sys.path`` itself, where its local modules then live.

Research repositories often run ``tools/train.py`` with ``import _init_paths`` first, a sibling module that does
``sys.path.insert(0, osp.join(osp.dirname(__file__), '..', 'lib'))`` (HRNet, CvT), or ``sys.path.insert(0, '../')``
(OpenPCDet): ``from utils.comm import comm`` is then ``lib/utils/comm.py``, a project helper, not a package. The
paths are evaluated statically (constants, ``__file__``, ``dirname``, ``join``, ``abspath``; a relative path
counts from the script's folder); anything else is ignored.
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path

from orchestrator.source.names import last_name
from orchestrator.source.walk import walk
from orchestrator.spec.pysource import UnreadableSource, parse_source

log = logging.getLogger(__name__)

_PASS_THROUGH = frozenset({"abspath", "realpath", "normpath", "expanduser", "str", "Path", "resolve"})
# what a repository's root holds (a checkout's .git; a copy's packaging, licence or read-me)
_ROOT_MARKS = (".git", "setup.py", "pyproject.toml", "setup.cfg", "LICENSE", "README.md")
_NEAR = 3  # the script's folder and the two above it: Project searches those already
_FAR = 6  # how far above the script a repository's root is looked for


def extra_roots(script: Path, tree: ast.Module) -> list[Path]:
    """The existing folders that ``script`` (or a sibling module it imports, ``_init_paths.py``) puts on
    ``sys.path``."""
    files = [(script, tree)]
    for node in tree.body:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        for name in names:
            sibling = script.parent / f"{name}.py"
            if "." not in name and sibling.is_file() and sibling.stat().st_size < 100_000:
                try:
                    files.append((sibling.resolve(), parse_source(sibling.read_bytes(), str(sibling))))
                except OSError:
                    continue
                except UnreadableSource as exc:  # its sys.path changes are not followed; the script still is
                    if exc.limit:
                        log.warning("%s; its sys.path changes are not followed", exc)
                    continue
    found: list[Path] = []
    for path, module in files:
        for value in _added(path, module):
            folder = value if value.is_absolute() else (script.parent / value)
            folder = Path(*_normal(folder.parts))
            if folder.is_dir() and folder not in found:
                found.append(folder)
    return found


def repository_root(script: Path) -> list[Path]:
    """The repository's root (the nearest folder above ``script`` that holds one of ``_ROOT_MARKS``) where it lies
    further up than the folders a project is searched in already: a recipe run with ``PYTHONPATH`` at the root, as
    icefall's README says for ``egs/librispeech/ASR/conformer_ctc/train.py`` importing ``icefall.dist``. Empty when
    the root is nearer, or none is found within ``_FAR`` folders."""
    for depth, folder in enumerate(script.parents[:_FAR]):
        if any((folder / mark).exists() for mark in _ROOT_MARKS):
            return [folder] if depth >= _NEAR else []
    return []


def _normal(parts: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if part == ".." and len(out) > 1:
            out.pop()
        elif part not in (".", ""):
            out.append(part)
    return out


def _added(file: Path, tree: ast.Module) -> list[Path]:
    env: dict[str, Path] = {}
    adders = {f.name for f in tree.body if isinstance(f, ast.FunctionDef) and any(
        isinstance(n, ast.Call) and _is_path_add(n) for n in walk(f))}
    out: list[Path] = []
    for node in walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = _value(node.value, file, env)
            if value is not None:
                env[node.targets[0].id] = value
        elif isinstance(node, ast.Call):
            arg = None
            if _is_path_add(node):
                arg = node.args[-1] if node.args else None
            elif isinstance(node.func, ast.Name) and node.func.id in adders and node.args:
                arg = node.args[0]
            value = _value(arg, file, env) if arg is not None else None
            if value is not None:
                out.append(value)
    return out


def _is_path_add(call: ast.Call) -> bool:
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr in ("insert", "append")
            and isinstance(func.value, ast.Attribute) and func.value.attr == "path"
            and isinstance(func.value.value, ast.Name) and func.value.value.id == "sys")


def _value(expr: ast.expr, file: Path, env: dict[str, Path]) -> Path | None:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return Path(expr.value)
    if isinstance(expr, ast.Name):
        return file if expr.id == "__file__" else env.get(expr.id)
    if isinstance(expr, ast.Call):
        name = last_name(expr.func)
        values = [_value(a, file, env) for a in expr.args]
        if any(v is None for v in values) or not values:
            return None
        parts = [v for v in values if v is not None]
        if name == "dirname" and len(parts) == 1:
            return parts[0].parent
        if name == "join":
            return Path(*parts)
        if name in _PASS_THROUGH and len(parts) == 1:
            return parts[0]
    return None
