"""The script's own project: the local modules it imports (siblings, its package, relative imports)
and what the functions it calls in them do, a few levels deep.

``Project.reach(qual)`` answers, for a call the script makes (``utils.init_distributed_mode``), which qualified names
that helper calls, itself or through the helpers it calls (``torch.cuda.set_device``, ...), or that it could not be read
(a relative import with no file, a syntax error): then the findings that depend on it are warnings.
Reading is bounded: at most ``MAX_FILES`` files, ``MAX_BYTES`` bytes each, ``MAX_DEPTH`` calls deep.
Modules that are not files of the project (torch, numpy, an installed package) are not followed.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from orchestrator.source.definitions import definition, definition_in
from orchestrator.source.exprnames import FunctionNode
from orchestrator.source.moduleglobals import global_values
from orchestrator.source.names import Module
from orchestrator.source.spawntargets import SPAWNER_NAMES
from orchestrator.source.starimports import exported, star_sources
from orchestrator.source.syspath import (
    elsewhere_in_repository,
    extra_roots,
    module_name,
    namespace_package,
    package_above,
    repository_root,
    script_roots,
)
from orchestrator.source.walk import walk
from orchestrator.spec.pysource import UnreadableSource, parse_source

MAX_FILES = 40  # local modules read per script
MAX_BYTES = 400_000  # a bigger file is not read (a generated or vendored module, not a helper)
MAX_DEPTH = 3  # helper -> helper -> helper
_MAX_MEMBERS = 60  # modules of a package folder without __init__.py searched for a name
PRINT_GUARD = "<print replaced>"  # a helper that replaces builtins.print (print on the main rank only)
# helpers parsed in this process (`orch doctor DIR` reads a shared utils.py once), keyed by the path and the digest
# of the bytes read (never size and mtime: an edit that keeps both, cp -p, rsync -t, tar x, is parsed again)
_PARSED: dict[tuple[str, bytes], Module] = {}
_PARSED_MAX = 256
_PRINT_TARGETS = frozenset({"builtins.print", "__builtin__.print", "__builtins__.print"})


@dataclass(frozen=True)
class Reach:
    """What a call into the project reaches: the names called, and a helper on the way not read (``unread``)."""

    quals: frozenset[str]
    unread: str | None = None


_MAX_UP = 6  # how far above the script a package it imports by name may start


class _Unreadable(Exception):
    pass


class Project:
    def __init__(self, script: Path, module: Module, tree: ast.Module) -> None:
        self.script = script.resolve()
        self._script_module = module
        self.roots = script_roots(self.script)
        self.roots += [r for r in extra_roots(self.script, tree) if r not in self.roots]
        # scripts/ or tools/: packages one or two folders up, or in src/ there (``src/ltxv_trainer``); a recipe's at
        # the repository's root (``syspath.repository_root``)
        self.above = [p for p in (*self.script.parents[1:3], *repository_root(self.script)) if p not in self.roots]
        self.above += [p / "src" for p in self.above if (p / "src").is_dir() and p / "src" not in self.roots]
        self.package = package_above(self.script)
        if self.package is None and (namespace := namespace_package(self.script, tree)) is not None:
            self.package = namespace[0]
            self.roots += [namespace[1]] if namespace[1] not in self.roots else []
        self._modules: dict[Path, Module | None] = {}
        self._reach: dict[tuple[Path, str], Reach] = {}
        self._found: dict[str, Path | None] = {}
        self._named: dict[Path, str] = {}  # a module's dotted name, as first found
        self._unimported: set[str] = set()  # bare names not looked for elsewhere: no module read imports them
        self.files_read = 0
        _add_relative_aliases(module, tree, self.package)
        self._settle(module)
        self._add_star_aliases(module)
        self.module = module

    # -- files --------------------------------------------------------------------------------------
    def find(self, dotted_name: str) -> Path | None:
        """The file of a local module ``a.b`` (``a/b.py`` or ``a/b/__init__.py`` under a root); None for ``""`` (a
        relative import whose package is not known)."""
        if not dotted_name:
            return None
        if dotted_name not in self._found:
            self._found[dotted_name] = None
            parts = dotted_name.split(".")
            # the script inside the package it imports, installed from a src/ layout (``src/tevatron/retriever/
            # driver/train.py`` imports ``tevatron.retriever.trainer``): the folder that holds that package
            owner = [p.parent for p in self.script.parents[:_MAX_UP] if p.name == parts[0] and p.parent not in (
                *self.roots, *self.above)][:1]
            for root, packages_only in [*((r, False) for r in self.roots), *((r, True) for r in [*self.above, *owner])]:
                if packages_only and not (root / parts[0]).is_dir():
                    continue  # above the script, only a package (a folder) counts: a stray utils.py is not its
                base = root.joinpath(*parts)
                # above the script, a bare name is the package's __init__.py (``from speechtokenizer import X`` in
                # scripts/train.py, speechtokenizer/ beside scripts/), never a module file of that name
                candidates = [base / "__init__.py"] if packages_only and len(parts) < 2 else [
                    base.with_suffix(".py"), base / "__init__.py"]
                found = next((c for c in candidates if c.is_file()), None)
                if found is not None and found.resolve() != self.script:
                    self._found[dotted_name] = found.resolve()
                    self._named.setdefault(found.resolve(), dotted_name)
                    break
            if self._found[dotted_name] is None and len(parts) == 1:  # on PYTHONPATH from another folder; never a
                # variable's name (``ddp = DDP(model)``): asked again once a module read imports it (``load``)
                if self._imported(dotted_name):
                    self._found[dotted_name] = elsewhere_in_repository(self.script, dotted_name)
                else:
                    self._unimported.add(dotted_name)
        return self._found[dotted_name]

    def _imported(self, name: str) -> bool:
        """The script or a module read so far imports ``name`` (``import idr_torch``, ``from functions import *``)."""
        modules = [self._script_module, *(m for m in self._modules.values() if m is not None)]
        quals = (q for m in modules for q in (*m.aliases.values(), *(q for qs in m.imports.values() for q in qs)))
        return any(q.split(".")[0] == name for q in quals) or any(
            star == name for m in modules for star in star_sources(m, None))

    def load(self, path: Path) -> Module:
        """The parsed module at ``path``; raises _Unreadable (missing, too big, syntax error, the cap)."""
        if path in self._modules:
            cached = self._modules[path]
            if cached is None:
                raise _Unreadable(str(path))
            return cached
        self._modules[path] = None
        if self.files_read >= MAX_FILES:
            raise _Unreadable(str(path))
        self.files_read += 1
        try:
            stat = path.stat()
            if stat.st_size > MAX_BYTES:
                raise _Unreadable(str(path))
            source = path.read_bytes()
            package = self.package_of(path)
            key = (f"{path}:{package}", hashlib.sha256(source).digest())
            module = _PARSED.get(key)
            if module is None:
                tree = parse_source(source, str(path))
                module = Module(tree)
                _add_relative_aliases(module, tree, package)
                self._settle(module)
                if len(_PARSED) >= _PARSED_MAX:
                    _PARSED.pop(next(iter(_PARSED)))
                _PARSED[key] = module
        except (OSError, UnreadableSource, RecursionError, MemoryError):  # Module() walks the tree too
            raise _Unreadable(str(path)) from None
        self._modules[path] = module
        for name in [n for n in self._unimported if self._imported(n)]:  # now imported: looked for at the next find
            self._unimported.discard(name)
            self._found.pop(name, None)
        return module

    def _add_star_aliases(self, module: Module) -> None:
        """The script's own ``from functions import *`` of a project module: each public name that module defines or
        imports (its ``__all__`` where it has one) is the script's name for it (``functions.create_model``,
        ``driver.drivers.ddp.DDPDriver`` through a package's ``__init__``), so its calls are followed there."""
        for star in star_sources(module, self.package):
            path = self.find(star)
            source = self.read(path) if path is not None else None
            if source is None:
                continue
            names = {s.name: f"{star}.{s.name}" for s in source.tree.body
                     if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
            names.update((name, qual) for name, qual in source.aliases.items() if not qual.startswith("<missing>"))
            for name, qual in exported(source.tree, names).items():
                module.aliases.setdefault(name, qual)

    def _settle(self, module: Module) -> None:
        """A name imported in several branches is bound by its last import (``aliases``); when that module is not in
        the project (``tasks.qa.get_trainer`` of a repository that ships only ``tasks/superglue``) and an earlier
        one is, the earlier one is the import the script can run, and the one its calls are followed into."""
        for name, quals in module.imports.items():
            current = module.aliases.get(name)
            if len(set(quals)) < 2 or current != quals[-1] or self._local(current):
                continue
            usable = next((qual for qual in quals if self._local(qual)), None)
            if usable is not None:
                module.aliases[name] = usable

    def _local(self, qual: str) -> bool:
        return self.find(qual) is not None or self.split(qual) is not None

    def package_of(self, path: Path) -> str | None:
        """The package ``path``'s relative imports start from: the folders with ``__init__.py`` above it, or the
        longer dotted name the project found it under (parents shipped without ``__init__.py``: FlagEmbedding's
        ``abc/finetune/embedder``; a namespace package: ``import pfns.train``, whose ``from .utils`` is in ``pfns``)."""
        own = package_above(path)
        named = self._named.get(path)
        if named is None:
            return own
        package = named if path.name == "__init__.py" else named.rpartition(".")[0]
        longer = bool(package) and "<" not in package and (own is None or package.endswith(f".{own}"))
        return package if longer else own

    def read(self, path: Path) -> Module | None:
        """``load``, None when it cannot be read (within the same bounds)."""
        try:
            return self.load(path)
        except _Unreadable:
            return None

    def imported(self, module: Module) -> list[Path]:
        """The project's files that ``module`` imports (``import utils``, ``from engine import train_worker``)."""
        found: list[Path] = []
        for qual in module.aliases.values():
            where = self.find(qual) or (self.split(qual) or (None, ""))[0]
            if where is not None and where not in found:
                found.append(where)
        return found

    def helpers(self) -> list[tuple[Path, Module]]:
        """The local modules read so far (those the script's calls reached), in reading order."""
        return [(path, module) for path, module in self._modules.items() if module is not None]

    def package_folder(self, path: Path) -> Path | None:
        """The folder of the top package of the local module at ``path`` (``pythia/`` for ``pythia.utils.flags``);
        None for a module outside a package."""
        parts = self._name_of(path).split(".")
        return path.parents[len(parts) - 2] if len(parts) >= 2 and len(path.parents) >= len(parts) else None

    def reached(self, path: Path) -> frozenset[str]:
        """The functions, classes and methods of the module at ``path`` that the script's calls reached
        (``f``, ``Class``, ``Class.method``), as followed so far."""
        return frozenset(name for where, name in self._reach if where == path)

    # -- reach --------------------------------------------------------------------------------------
    def split(self, qual: str) -> tuple[Path, str] | None:
        """``(file, "f")`` for a qualified name of a local module's function or class; None when not local."""
        parts = qual.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            name = ".".join(parts[:cut])
            path = self.find(name)
            if path is not None:
                return path, ".".join(parts[cut:])
        for cut in range(len(parts) - 1, 0, -1):
            path = self._member(".".join(parts[:cut]), parts[cut])
            if path is not None:
                return path, ".".join(parts[cut:])
        return None

    def _member(self, package: str, name: str) -> Path | None:
        """The one module of the folder ``package`` that defines ``name`` at its top level, when that folder has
        no ``__init__.py`` to say where the name comes from (``from pkg.training import setup``, a package whose
        ``__init__`` re-exports ``torch_setup.setup`` and was not shipped with the script): None when no module or
        several define it."""
        key = f"{package}:{name}"
        if key not in self._found:
            self._found[key] = None
            pattern = re.compile(rf"^(?:def|class|async def) {re.escape(name)}\b".encode(), re.MULTILINE)
            for root in [*self.roots, *self.above]:
                folder = root.joinpath(*package.split("."))
                if not folder.is_dir() or (folder / "__init__.py").exists():
                    continue
                found = [f for f in sorted(folder.glob("*.py"))[:_MAX_MEMBERS] if _defines(f, pattern)]
                if len(found) == 1 and found[0].resolve() != self.script:
                    self._found[key] = found[0].resolve()
                    break
        return self._found[key]

    def function(self, qual: str) -> tuple[Module, FunctionNode] | None:
        """The project function ``qual`` names (``utils.dist.get_rank``) and its module, through re-exports
        (``from .comm import get_rank`` or ``from .comm import *`` in a package's ``__init__``); None when it is not
        one."""
        found = self.definition(qual)
        node = found[2] if found is not None else None
        return (found[1], node) if found is not None and isinstance(node, FunctionNode) else None

    def global_values(self, qual: str) -> tuple[Module, list[ast.expr]] | None:
        """A project module's global ``qual`` names (``ptu.dist_rank``): its module and values (no call reached it)."""
        if (where := self.split(qual)) is None or "." in where[1]:
            return None
        known, module = where[0] in self._modules, self.read(where[0])
        if not known:
            self._modules.pop(where[0])
        return (module, global_values(module.tree, where[1])) if module is not None else None

    def definition(self, qual: str, depth: int = 0) -> tuple[Path, Module, FunctionNode | ast.ClassDef] | None:
        """The project function or class ``qual`` names, with its file and module, through re-exports by name and by
        star (``from core import Trainer``, whose ``__init__`` says ``from .trainer import Trainer``)."""
        where = self.split(qual) if depth <= MAX_DEPTH else None
        module = self.read(where[0]) if where is not None else None
        if where is None or module is None or "." in where[1]:
            return None
        node = definition(module, where[1])
        if node is not None:
            return where[0], module, node
        imported = module.aliases.get(where[1])
        if imported is None:  # ``from .utils import *`` in a package's ``__init__``
            starred = (f"{star}.{where[1]}" for star in star_sources(module, self.package_of(where[0])) if star)
            return next((found for q in starred if (found := self.definition(q, depth + 1)) is not None), None)
        return self.definition(imported, depth + 1) if imported != qual else None

    def reach(self, qual: str | None, depth: int = 0) -> Reach | None:
        """What calling ``qual`` reaches in the project (None: not a project function)."""
        if qual is None or depth > MAX_DEPTH:
            return None
        if qual.startswith("<missing>"):
            return Reach(frozenset(), unread=qual.removeprefix("<missing>").split(":")[0])
        where = self.split(qual)
        if where is None:
            return None
        path, name = where
        key = (path, name)
        if key not in self._reach:
            self._reach[key] = Reach(frozenset())  # a cycle adds nothing
            self._reach[key] = self._compute(path, name, depth)
        return self._reach[key]

    def _name_of(self, path: Path) -> str:
        """The dotted name ``path`` was found under (its own calls of its functions resolve through it)."""
        return self._named.get(path) or module_name(path, [*self.roots, *self.above])

    def _compute(self, path: Path, name: str, depth: int) -> Reach:
        """What ``name`` (a function, a class or ``Class.method``) of the module at ``path`` reaches."""
        try:
            module = self.load(path)
        except _Unreadable as exc:
            return Reach(frozenset(), unread=str(exc))
        head, _, rest = name.partition(".")
        node = definition(module, head)
        if node is None:
            imported = module.aliases.get(head)  # re-exported: `from .misc import init_distributed_mode`
            if imported is not None and imported != head and depth < MAX_DEPTH:
                return self.reach(f"{imported}.{rest}" if rest else imported, depth + 1) or Reach(frozenset())
            own = self._name_of(path)  # the package a relative import starts from
            package = own if path.name == "__init__.py" else own.rpartition(".")[0]
            for star in star_sources(module, package or None):  # `from .build import *` in a package's __init__
                found = self.reach(f"{star}.{name}", depth + 1) if depth < MAX_DEPTH and star else None
                if found is not None and (found.quals or found.unread):
                    return found
            return Reach(frozenset())
        if rest and isinstance(node, ast.ClassDef):
            method = definition_in(node.body, rest.split(".")[0])
            node = method if method is not None else node
        quals: set[str] = set()
        unread: str | None = None
        for inner in walk(node):
            if isinstance(inner, ast.Assign) and any(module.qualname(t) in _PRINT_TARGETS for t in inner.targets
                                                     if isinstance(t, ast.Attribute)):
                quals.add(PRINT_GUARD)
            if not isinstance(inner, ast.Call):
                continue
            q = module.qualname(inner.func)
            if q is not None:
                quals.add(q)
            local = module.local_function(inner)
            target = f"{self._name_of(path)}.{local.name}" if local is not None else q
            if isinstance(inner.func, ast.Name) and local is None and (
                    (rest and inner.func.id == "cls") or isinstance(definition(module, inner.func.id), ast.ClassDef)):
                # the module's own class built (a classmethod's cls(...), TinyStoriesModel(model)): its methods run
                target = f"{self._name_of(path)}.{head if inner.func.id == 'cls' else inner.func.id}"
            subs = [self.reach(target, depth + 1) if target else None]
            if q is not None and q.rsplit(".", 1)[-1] in SPAWNER_NAMES and inner.args:
                subs.append(self.reach(module.qualname(inner.args[0]), depth + 1))  # spawn(mpu.run, ...) runs it
            for sub in subs:
                if sub is not None:
                    quals |= sub.quals
                    unread = unread or sub.unread
        return Reach(frozenset(quals), unread)


def _defines(path: Path, pattern: re.Pattern[bytes]) -> bool:
    try:
        return path.stat().st_size <= MAX_BYTES and pattern.search(path.read_bytes()) is not None
    except OSError:
        return False


def _add_relative_aliases(module: Module, tree: ast.Module, package: str | None) -> None:
    """``from .utils import f`` / ``from . import utils`` as absolute names (``pkg.utils.f``); in a script
    outside a package the relative import cannot work: its names map to ``<missing>``, unless the file also
    imports the name absolutely (``try: from data.x import f`` / ``except ImportError: from .data.x import f``)."""
    for node in walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.level):
            continue
        base = package.split(".") if package else None
        if base is not None and node.level > 1:
            base = base[: len(base) - (node.level - 1)] or None
        for alias in node.names:
            local = alias.asname or alias.name
            if base is None:
                if not module.aliases.get(local, "<missing>").startswith("<missing>"):
                    continue  # the absolute import of the same name is the one that works here
                module.aliases[local] = f"<missing>{node.module or '.'}:{alias.name}"
                continue
            head = ".".join([*base, *([node.module] if node.module else [])])
            module.aliases[local] = f"{head}.{alias.name}"
