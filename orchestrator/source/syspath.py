"""Folders a script adds to ``sys.path`` itself, where its local modules then live.

Research repositories often run ``tools/train.py`` with ``import _init_paths`` first, a sibling module that does
``sys.path.insert(0, osp.join(osp.dirname(__file__), '..', 'lib'))`` (HRNet, CvT), or ``sys.path.insert(0, '../')``
(OpenPCDet): ``from utils.comm import comm`` is then ``lib/utils/comm.py``, a project helper, not a package. The
paths are evaluated statically (constants, ``__file__``, ``dirname``, ``join``, ``abspath``; a relative path
counts from the script's folder); anything else is ignored.

Also where a module lives when nothing the script runs says so: the one module of a bare name elsewhere in the
repository (``elsewhere_in_repository``: a folder the README's command puts on ``PYTHONPATH``), and the names of
files as Python would import them from those folders (``package_above``, ``module_name``).
"""

from __future__ import annotations

import ast
import functools
import logging
import os
import sys
from pathlib import Path

from orchestrator.source.exprnames import last_name
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
    found = _nearest_root(script)
    return [found[1]] if found is not None and found[0] >= _NEAR else []


def _nearest_root(script: Path) -> tuple[int, Path] | None:
    """How many folders up the repository's root is (0: the script's own), and the root; None within ``_FAR``."""
    return next(((depth, folder) for depth, folder in enumerate(script.parents[:_FAR])
                 if any((folder / mark).exists() for mark in _ROOT_MARKS)), None)


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


# installed packages a repository may hold a folder or file of the same name beside (a data set's ``datasets/``, a
# ``wandb/`` run folder, a vendored copy): a bare import of one of these is the package, never looked for in the tree
_INSTALLED = frozenset({
    "torch", "torchvision", "torchaudio", "numpy", "scipy", "sklearn", "pandas", "PIL", "cv2", "yaml", "tqdm",
    "datasets", "transformers", "accelerate", "evaluate", "peft", "trl", "timm", "lightning", "pytorch_lightning",
    "deepspeed", "wandb", "hydra", "omegaconf", "einops", "apex", "mmcv", "mmengine", "mmdet", "detectron2",
    "fairseq", "tensorboard", "tensorboardX", "matplotlib", "h5py", "lmdb", "hostlist", "submitit", "jax", "tensorflow",
})
_SKIP = frozenset({"site-packages", "node_modules", "venv", "env", "build", "dist", "__pycache__"})
_MAX_ENTRIES = 20_000  # a tree larger than this is not searched (the answer would be a guess, and slow)


def elsewhere_in_repository(script: Path, name: str) -> Path | None:
    """The one module ``name`` (``name.py`` or ``name/__init__.py``) in ``script``'s repository, for a bare
    ``import name`` the script's own folders do not hold: a helper in another folder that the README's command puts
    on ``PYTHONPATH`` (AudioSet ConvNeXt's ``import idr_torch`` from ``src/.../utils/``). None where there is no
    repository root (``_ROOT_MARKS``) within ``_FAR`` folders, where the name is the standard library's or a
    well-known installed package's, where the tree is too large, and where two modules have that name."""
    if not name.isidentifier() or name in sys.stdlib_module_names or name in _INSTALLED:
        return None
    root = _nearest_root(script)
    candidates = _modules_under(root[1]).get(name, ()) if root is not None else ()
    return candidates[0] if len(candidates) == 1 else None


def mentioned_in_repository(script: Path, word: bytes, max_bytes: int) -> bool | None:
    """Whether a module of ``script``'s repository (the tree at its root, ``_ROOT_MARKS``) holds ``word``: a spawner's
    ``set_device`` looked for where the reader's calls did not lead. None where no root is found within ``_FAR``
    folders or the tree is too large to search; a module larger than ``max_bytes`` (one not read) may hold it."""
    root = _nearest_root(script)
    modules = _modules_under(root[1]) if root is not None else {}
    if not modules:
        return None
    return any(holds(path, (word,), max_bytes) for paths in modules.values() for path in paths)


def holds(path: Path, words: tuple[bytes, ...], max_bytes: int) -> bool:
    """Whether the file at ``path`` holds one of ``words`` (read once); one larger than ``max_bytes`` (not read), or
    unreadable, may."""
    try:
        if path.stat().st_size > max_bytes:
            return True
        text = path.read_bytes()
        return any(word in text for word in words)
    except OSError:
        return True  # unreadable: it may hold it


@functools.lru_cache(maxsize=8)
def _modules_under(root: Path) -> dict[str, tuple[Path, ...]]:
    """Every module of the tree at ``root`` by its bare name (``x.py``, ``x/__init__.py``); empty where the tree is
    too large to search (read once per root)."""
    found: dict[str, list[Path]] = {}
    seen = 0
    for folder, dirs, files in os.walk(root):
        seen += len(dirs) + len(files)
        if seen > _MAX_ENTRIES:
            return {}
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIP]
        here = Path(folder)
        for file in files:
            if file.endswith(".py") and file != "__init__.py":
                found.setdefault(file[:-3], []).append((here / file).resolve())
        for sub in dirs:
            if (here / sub / "__init__.py").is_file():
                found.setdefault(sub, []).append((here / sub / "__init__.py").resolve())
    return {name: tuple(paths) for name, paths in found.items()}


def package_above(path: Path) -> str | None:
    """``a.b`` for ``.../a/b/x.py`` when a and b hold ``__init__.py``; None outside a package."""
    parts: list[str] = []
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.append(folder.name)
        folder = folder.parent
    return ".".join(reversed(parts)) or None


def module_name(path: Path, roots: list[Path]) -> str:
    """``a.b`` for ``root/a/b.py`` under the first of ``roots`` that holds ``path`` (the script's folders, then the
    folders above it where its packages were found); the file's stem under none."""
    for root in roots:
        try:
            rel = path.relative_to(root.resolve())
        except ValueError:
            continue
        parts = list(rel.with_suffix("").parts)
        if parts and parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts)
    return path.stem


def script_roots(script: Path) -> list[Path]:
    """Where local modules are looked for: the script's folder, then the folder above its package."""
    roots = [script.parent]
    top = script.parent
    while (top / "__init__.py").is_file() and top.parent != top:
        top = top.parent
    if top != script.parent:
        roots.append(top)
    return roots


def namespace_package(script: Path, tree: ast.Module) -> tuple[str, Path] | None:
    """The package a script outside any ``__init__.py`` package must be imported from, and the folder above it, when
    its own module-level imports are relative (``from .train_ddp import train_model`` in ``src/icecream/cli.py``,
    run as a console script of the namespace package ``icecream``): ``("icecream", src)``. None for a script with
    no such import, or one that falls back on an absolute import (``try: from .x import f`` / ``except ImportError:
    from x import f``: it runs as a plain script too)."""
    relative = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.level]
    levels = [n.level for n in relative]
    parents = list(script.parents)
    if not levels or any(isinstance(n, ast.Try) for n in tree.body) or max(levels) >= len(parents):
        return None
    named = [n.module.split(".")[0] if n.module else alias.name for n in relative if n.level == 1 for alias in n.names]
    if not any((script.parent / f"{name}.py").is_file() or (script.parent / name).is_dir() for name in named):
        return None  # no sibling it names is there: not this folder's package (a missing module stays missing)
    depth = max(levels)
    return ".".join(folder.name for folder in reversed(parents[:depth])), parents[depth]
