"""DDP020: a name the code uses and nothing defines (a NameError waiting, often after the whole training).

The analysis is pyflakes' (a well-kept checker, imported only when this rule runs): only its undefined-name
messages, never its other ones (an ``__all__`` entry with no definition), and its names that may come from
``import *`` where every such import is of a project module whose names are read (``source/starimports.py``: its
``__all__``, else its public top-level names, and its own star imports): a name none of them brings is undefined too.
What it cannot know is left out, to stay quiet on correct code:

- a file with ``import *`` of an installed package or of a module that cannot be read (the name may come from it),
  or that writes names where pyflakes cannot see them (``globals()``, ``locals()``, ``vars()``, ``exec``,
  ``builtins.NAME = ...``);
- names that exist only on some Pythons (builtins newer than the one running the doctor, Python 2's, a
  notebook's ``get_ipython``) and names used in annotations (a string annotation, anything under ``from
  __future__ import annotations``, names imported only ``if TYPE_CHECKING:``): never evaluated at run time;
- a fragment (a file with no import at all: a snippet pasted from a post) uses its omitted imports and the
  definitions left out of the post: class-like names, names only called, and the usual import names
  (``torch``, ``nn``, ``dist``, ...) are taken for those; the rest (``ddp_model``) is still reported.

An error only where the line runs whenever its function does (at most under a rank condition: ``if rank == 0:
torch.save(ddp_model...)`` runs on rank 0); a warning on a guessed path: a branch on a flag or a value, an
exception's handler, a function the file never refers to; in the project's modules (``check.HELPER_RULES``)
every finding is a warning.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.source.analysis import project_path
from orchestrator.source.branches import catches, main_guard, statements_before
from orchestrator.source.exprnames import last_name, parameter_defaults
from orchestrator.source.starimports import star_names
from orchestrator.source.walk import walk

# builtins that exist only on some Pythons (newer than 3.10, Python 2's), and what notebooks define
OTHER_PYTHONS = frozenset({
    "aiter", "anext", "EncodingWarning", "ExceptionGroup", "BaseExceptionGroup", "PythonFinalizationError",
    "_IncompleteInputError", "unicode", "xrange", "raw_input", "basestring", "long", "unichr", "execfile", "file",
    "reduce", "cmp", "buffer", "apply", "intern", "coerce", "reload", "StandardError", "WindowsError",
    "get_ipython", "display", "__IPYTHON__",
    "profile", "_",  # what kernprof (line_profiler's @profile) and gettext.install() put into builtins
})
# the names a post's omitted imports usually bring (a fragment's)
IMPORT_NAMES = frozenset({
    "torch", "nn", "F", "dist", "mp", "optim", "np", "os", "sys", "time", "math", "random", "json", "argparse",
    "transforms", "datasets", "models", "tqdm", "plt", "pd", "yaml", "logging", "shutil", "pickle", "glob",
    "torchvision", "functional", "cudnn", "amp", "autocast", "io", "re", "copy", "datetime", "socket", "warnings",
    "collections", "itertools", "functools", "subprocess", "timm", "wandb", "transformers", "accelerate", "lightning",
    "pl", "L", "tf", "cv2", "scipy", "sklearn", "data", "utils", "tv", "T", "init", "lr_scheduler", "partial",
})
_SCOPES = frozenset({"globals", "locals", "vars"})  # called with no argument: the scope's own names
_TAKES_NAME_ERROR = frozenset({"Exception", "BaseException", "NameError"})  # handlers a NameError ends in
_EXECS = frozenset({"exec", "execfile"})


def check_undefined_names(a: Analysis) -> Iterator[Finding]:
    tree = a.module.tree
    starred = _star_names(a)
    if _unsure(tree) or starred is None:
        return
    try:
        from pyflakes import checker, messages
    except ImportError:  # not installed: the rule is skipped, never the doctor
        return
    try:
        found = checker.Checker(tree, filename=a.filename, withDoctest=False).messages
    except (RecursionError, MemoryError):
        return
    uses = _evaluated_names(tree)
    fragment = not any(isinstance(n, ast.Import | ast.ImportFrom) for n in walk(tree))
    called = {n.func.id for n in walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    referred = _referred(tree)
    # `global logger` in main() then `logger = ...` there: a module name once main() ran (PointHMR; pyflakes does not
    # count a function's global assignment as the module's)
    seen: set[str] = {name for n in walk(tree) if isinstance(n, ast.Global) for name in n.names}
    for message in found:
        if type(message) is not messages.UndefinedName and not (
                type(message) is messages.ImportStarUsage and message.message_args[0] not in starred):
            continue  # a name a project module's `import *` brings is defined
        name = str(message.message_args[0])
        node = uses.get((message.lineno, message.col))
        if node is None or node.id != name or name in OTHER_PYTHONS or name in seen:
            continue  # a string annotation, a doctest, another Python's builtin; each name once
        if fragment and (name in IMPORT_NAMES or name in called or name[:1].isupper()):
            continue
        if _never_runs(a, node) or _raised(a, node) or _caught(a, node):
            continue  # under `if TYPE_CHECKING:` or `if False:`; `raise NotImplementError`: it stops there anyway
        if any(name in _bound(scope) for scope in _scopes(a, node)):
            continue  # bound later in its own function: a loop's next pass may find it (pyflakes reads in order);
            # or bound by an enclosing one and deleted after the closure ran (pyflakes reads a closure at the end)
        seen.add(name)
        outer = _outer_function(a, node)
        if outer is not None and outer.name not in referred:
            yield a.finding("DDP020", node, f"{name!r}, in {outer.name}(), which the file never calls",
                            severity="warning", confidence="possible")
        else:
            guess = _branch(a, node)
            detail = f"{name!r} is never defined" + (f"; on the path {guess}" if guess else "")
            yield a.finding("DDP020", node, detail, severity="warning" if guess else None)


def _branch(a: Analysis, node: ast.AST) -> str | None:
    """What makes the line's path a guess (a branch taken on a flag, an exception's handler), or None when the
    line runs whenever its function does (at most under a rank condition: rank 0 gets there)."""
    child, current = node, a.module.parents.get(node)
    while current is not None and not isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        if isinstance(current, ast.ExceptHandler):
            return "of an exception's handler"
        if (isinstance(current, ast.If | ast.IfExp) and child is not current.test
                and not (a.ranks.is_condition(current.test) or main_guard(current.test))):
            return f"of a branch (line {current.lineno}: {ast.unparse(current.test)[:50]})"
        if isinstance(current, ast.BoolOp) and child is not current.values[0]:
            return f"of a condition (line {current.lineno})"
        child, current = current, a.module.parents.get(current)
    return None


def _raised(a: Analysis, node: ast.Name) -> bool:
    """``node`` is the exception a ``raise`` names (``raise NotImplementError``, ``raise ConfigEror(...)``): the
    NameError stops the run where the misspelt exception would have, with the line to mend in its traceback."""
    raised: ast.AST = node
    parent = a.module.parents.get(node)
    if isinstance(parent, ast.Call) and parent.func is node:
        raised, parent = parent, a.module.parents.get(parent)
    return isinstance(parent, ast.Raise) and parent.exc is raised


def _caught(a: Analysis, node: ast.Name) -> bool:
    """``node`` is in the body of a ``try`` whose handler takes a NameError (``except:``, ``except Exception``,
    ``except NameError``): NotaGen's ``weakref`` in a cleanup that ends ``except: pass``; the run goes on."""
    child: ast.AST = node
    current = a.module.parents.get(node)
    while current is not None and not isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        if isinstance(current, ast.Try) and child in current.body and any(
                catches(h, _TAKES_NAME_ERROR) for h in current.handlers):
            return True
        child, current = current, a.module.parents.get(current)
    return False


def _never_runs(a: Analysis, node: ast.AST, depth: int = 0) -> bool:
    """``node`` is under ``if TYPE_CHECKING:``, ``if False:``, a branch its literal choices never take or one on a
    parameter every call leaves at its empty default (``_left_out``), or after a statement that always leaves its block
    (``raise ValueError("No way wandb")`` above ``wandb.Image(grid)``); or in a function of the file that is only
    called, and only where the call never runs (protein_affinity's ``evaluate()``, called under ``if val_dataloader:``
    of a ``train()`` no call gives one)."""
    child, current = node, a.module.parents.get(node)
    while current is not None:
        if isinstance(current, ast.If) and child in current.body and (
                ast.unparse(current.test).split(".")[-1] == "TYPE_CHECKING"
                or (isinstance(current.test, ast.Constant) and not current.test.value)
                or _impossible(a, current.test) or _left_out(a, current.test)):
            return True
        if isinstance(child, ast.stmt) and _after_exit(current, child):
            return True
        child, current = current, a.module.parents.get(current)
    function = a.module.function_of(node)
    calls = a.module.calls_of(function) if function is not None and a.outer is None and depth < _CALL_DEPTH else []
    return bool(calls) and function is not None and _only_called(a, function, calls) and all(
        _never_runs(a, call, depth + 1) for call in calls)


_CALL_DEPTH = 3  # callers climbed for a function whose every call never runs


def _left_out(a: Analysis, test: ast.expr) -> bool:
    """``if val_dataloader:`` (or ``... is not None``) on a parameter whose default is ``None``/``False``, that its
    function never binds again and that every call of the function in this file leaves out (a script, not a helper
    module another file may call)."""
    compared = isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot) and (
        isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None)
    name = test.left if isinstance(test, ast.Compare) and compared else test
    function = a.module.function_of(test)
    if not isinstance(name, ast.Name) or function is None or a.outer is not None:
        return False
    default = parameter_defaults(function).get(name.id)
    empty = isinstance(default, ast.Constant) and (default.value is None if compared else not default.value)
    if not empty or len(a.module.scope_of(name).assigned.get(name.id, ())) != 1:
        return False  # no empty default, or bound again in the function
    calls = a.module.calls_of(function)
    return bool(calls) and _only_called(a, function, calls) and not a.module.argument_for(function, name.id) and all(
        not any(isinstance(x, ast.Starred) for x in call.args) and all(k.arg is not None for k in call.keywords)
        for call in calls)  # what a starred call or ``**kwargs`` passes is not known


def _only_called(a: Analysis, function: ast.FunctionDef | ast.AsyncFunctionDef, calls: list[ast.Call]) -> bool:
    """The file names ``function`` nowhere but in ``calls`` (not handed on as a callback, a thread's target)."""
    called = {id(call.func) for call in calls}
    method = not isinstance(a.module.parents.get(function), ast.Module)  # self.f(): an attribute of that name
    return all(id(n) in called for n in a.module.nodes if (isinstance(n, ast.Name) and n.id == function.name) or (
        method and isinstance(n, ast.Attribute) and n.attr == function.name))


_EXITS = (ast.Raise, ast.Return, ast.Continue, ast.Break)


def _after_exit(parent: ast.AST, statement: ast.stmt) -> bool:
    """An earlier statement of ``statement``'s own block (in ``parent``) always leaves it: ``statement`` never runs."""
    return any(isinstance(s, _EXITS) for s in statements_before(parent, statement))


def _impossible(a: Analysis, test: ast.expr) -> bool:
    """``input_type == "point"`` where ``input_type`` can only be one of a literal list's values that is not it
    (``input_type = random.choice(["box"])``, also through a name bound to the list): the branch never runs."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Constant)):
        return False
    choices = _literal_choices(a, test.left, 0)
    return choices is not None and test.comparators[0].value not in choices


def _literal_choices(a: Analysis, expr: ast.expr, depth: int) -> list[object] | None:
    """The values ``expr`` can hold when they are all literal: a constant, or ``random.choice`` of a literal list."""
    if depth > 3:
        return None
    if isinstance(expr, ast.Constant):
        return [expr.value]
    if isinstance(expr, ast.List | ast.Tuple) and all(isinstance(e, ast.Constant) for e in expr.elts):
        return [e.value for e in expr.elts if isinstance(e, ast.Constant)]
    if isinstance(expr, ast.Call) and (last_name(expr.func) or "") == "choice" and len(expr.args) == 1:
        return _literal_choices(a, expr.args[0], depth + 1)
    if isinstance(expr, ast.Name):
        scope = a.module.scope_of(expr)
        values = [v for _, v in scope.assigned.get(expr.id, ())]
        if len(values) != 1 or values[0] is None:
            return None  # assigned more than once (or a parameter, a loop target): not known
        return _literal_choices(a, values[0], depth + 1)
    return None


def _scope(a: Analysis, node: ast.AST) -> ast.AST:
    current = a.module.parents.get(node)
    while current is not None and not isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        current = a.module.parents.get(current)
    return current if current is not None else a.module.tree


def _scopes(a: Analysis, node: ast.AST) -> Iterator[ast.AST]:
    """``node``'s own scope, then each function (or lambda) around it; never the module as an enclosing scope
    (its walk would take every name any function of the file binds)."""
    scope = _scope(a, node)
    yield scope
    while scope is not a.module.tree:
        scope = _scope(a, scope)
        if scope is not a.module.tree:
            yield scope


def _bound(scope: ast.AST) -> set[str]:
    """Every name ``scope`` binds somewhere (its nested functions' too: said conservatively)."""
    out: set[str] = set()
    for node in walk(scope):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            out.update(node.names)
    return out


def _star_names(a: Analysis) -> frozenset[str] | None:
    """The names the file's ``from X import *`` lines bring (none: empty), each X a module of the script's project
    (``source.starimports.star_names``); None where one is not (an installed package's names are not read)."""
    if not any(isinstance(n, ast.ImportFrom) and any(alias.name == "*" for alias in n.names) for n in a.module.nodes):
        return frozenset()
    project = a.script_project
    path = project_path(a.filename)
    if project is None or path is None:
        return None
    return star_names(a.module, project.package_of(path.resolve()), project)


def _unsure(tree: ast.Module) -> bool:
    """Whether names may be bound where pyflakes cannot see them: ``globals()``, ``exec``..."""
    for node in walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (
                node.func.id in _EXECS or (node.func.id in _SCOPES and not node.args)):
            return True
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name) \
                and node.value.id in ("builtins", "__builtins__", "__builtin__"):
            return True
    return False


def _evaluated_names(tree: ast.Module) -> dict[tuple[int, int], ast.Name]:
    """The names read at run time, by (line, column): not those inside annotations."""
    skip: set[int] = set()
    for node in walk(tree):
        notes: list[ast.expr | None] = []
        if isinstance(node, ast.arg):
            notes.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            notes.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            notes.append(node.annotation)
        for note in notes:
            if note is not None:
                skip.update(id(n) for n in walk(note))
    return {(n.lineno, n.col_offset): n for n in walk(tree)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in skip}


def _referred(tree: ast.Module) -> set[str]:
    """Every name the file reads (``f``, ``obj.f``, a string naming it for ``getattr``)."""
    out: set[str] = set()
    for node in walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            out.add(node.value)
    return out


def _outer_function(a: Analysis, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The module-level function ``node`` is in (None: module level, or a class's body or method)."""
    outer: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    current = a.module.parents.get(node)
    while current is not None:
        if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef):
            outer = current
        elif isinstance(current, ast.ClassDef):
            outer = None
        current = a.module.parents.get(current)
    return outer
