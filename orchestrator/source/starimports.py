"""``from module import *`` in a script's project: which modules a module takes every name of, and which names."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from orchestrator.source.names import Module


def star_sources(module: Module, package: str | None, nested: bool = False) -> list[str]:
    """The modules ``module`` takes every name of (``from .build import *``, ``from pkg.misc import *``; ``nested``:
    also in a module-level ``try``/``if`` block), as absolute names, in import order; ``""`` for a relative one whose
    package is not known (``from ..utils import *`` where no ``__init__.py`` places the file): a module no reader
    finds."""
    out: list[str] = []
    for node in _module_level(module.tree) if nested else module.tree.body:
        if not (isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names)):
            continue
        if not node.level:
            out += [node.module] if node.module else []
            continue
        base = package.split(".") if package else []
        base = base[: len(base) - (node.level - 1)] if node.level > 1 and len(base) >= node.level - 1 else (
            base if node.level == 1 else [])
        out.append(".".join([*base, *([node.module] if node.module else [])]) if base else "")
    return out


def _module_level(tree: ast.Module) -> list[ast.stmt]:
    """The module's statements outside functions and classes, in order (its blocks' too)."""
    out: list[ast.stmt] = []
    for node in tree.body:
        out.append(node)
        if isinstance(node, _BLOCKS):
            inner = ast.Module(body=[*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", []),
                                     *(s for h in getattr(node, "handlers", []) for s in h.body)], type_ignores=[])
            out += _module_level(inner)
    return out


def dunder_all(tree: ast.Module) -> set[str] | None:
    """The names of a module's literal ``__all__``; None where it has none."""
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets) \
                and isinstance(stmt.value, ast.List | ast.Tuple):
            return {e.value for e in stmt.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return None


def exported(tree: ast.Module, names: Mapping[str, str]) -> dict[str, str]:
    """Of ``names`` (a name the module binds -> what it is), those ``from module import *`` brings: the module's
    ``__all__`` where it has one, else its names not starting with ``_``."""
    public = dunder_all(tree)
    return {name: qual for name, qual in names.items()
            if ((name in public) if public is not None else not name.startswith("_"))}


_DEPTH = 4
_BLOCKS = (ast.If, ast.Try, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)
_SCOPE_CALLS = frozenset({"globals", "locals", "vars", "exec", "execfile"})


class Modules(Protocol):
    """What reads a script's project (``source.project.Project``): a module's file by dotted name, the parsed module,
    and the package its relative imports start from."""

    def find(self, dotted_name: str) -> Path | None: ...

    def read(self, path: Path) -> Module | None: ...

    def package_of(self, path: Path) -> str | None: ...


def star_names(module: Module, package: str | None, project: Modules, depth: int = 0) -> frozenset[str] | None:
    """Every name ``module``'s ``from X import *`` lines bring, where each X is a module of the script's project that
    can be read: its ``__all__``, else its public top-level
    names (defined, assigned or imported, in any block at module level), and what its own star imports bring. None
    where one cannot be known: an X outside the project (an installed package), one that cannot be read, one that
    writes names out of sight (``globals()``, ``exec`` at module level), or star imports deeper than four."""
    names: set[str] = set()
    for source in star_sources(module, package, nested=True):
        path = project.find(source) if source else None
        found = project.read(path) if path is not None and depth < _DEPTH else None
        if path is None or found is None or _writes_unseen(found.tree) or _all_changed(found.tree):
            return None
        inner = star_names(found, project.package_of(path), project, depth + 1)
        if inner is None:
            return None
        public = dunder_all(found.tree)
        own = _top_level(found.tree) | (_submodules(found.tree) if path.name == "__init__.py" else set())
        names |= public if public is not None else {n for n in own | inner if not n.startswith("_")}
    return frozenset(names)


def _submodules(tree: ast.Module) -> set[str]:
    """The submodules a package's ``__init__.py`` imports from (``from .evaluate import eval_result``): importing a
    submodule binds it in its package, so ``from package import *`` brings ``evaluate`` too."""
    return {node.module.split(".")[0] for node in _module_level(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module}


def _top_level(tree: ast.Module) -> set[str]:
    """The names a module binds at module level (in its ``if``/``try``/loop/``with`` blocks too)."""
    out: set[str] = set()
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            out.update(alias.asname or alias.name.split(".")[0] for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        if isinstance(node, ast.With | ast.AsyncWith):
            out.update(n.id for item in node.items if item.optional_vars is not None
                       for n in ast.walk(item.optional_vars) if isinstance(n, ast.Name))
        if isinstance(node, _BLOCKS):
            stack += [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            stack += [s for handler in getattr(node, "handlers", []) for s in handler.body]
            out.update(h.name for h in getattr(node, "handlers", []) if h.name)
    return out


def _all_changed(tree: ast.Module) -> bool:
    """``__all__`` built other than by one literal (``__all__ += [...]``, ``__all__.extend(...)``, a sum): its names
    are not all read."""
    writes = [n for n in ast.walk(tree)
              if (isinstance(n, ast.Name) and n.id == "__all__" and isinstance(n.ctx, ast.Store))
              or (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "__all__")]
    return bool(writes) and (len(writes) > 1 or dunder_all(tree) is None)


def _writes_unseen(tree: ast.Module) -> bool:
    """Module-level code that binds names where no reader sees them (``globals()[k] = v``, ``exec(...)``)."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _SCOPE_CALLS
               for stmt in tree.body if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
               for n in ast.walk(stmt))
