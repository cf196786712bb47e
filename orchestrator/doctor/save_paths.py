"""DDP006: whose file a save writes. Whether its target visibly names a file (a string, ``os.path.join``, a
``type=str`` flag, a name like ``ckpt_path``), and whether that file is one every writer shares or each one's own:
per rank (``f"ckpt_{rank}.pt"``), per process (``uuid4()``, ``os.getpid()``, an unseeded random name), per host
(``socket.gethostname()``, a TensorBoard writer's default ``runs/<time>_<hostname>``); and whether it is a data
cache (built once where it is missing and read back), not a checkpoint: each node's first process may build it."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.framework_saves import script_arguments
from orchestrator.doctor.rules_random import seeded_states
from orchestrator.source.analysis import Analysis as Reading
from orchestrator.source.exprnames import dotted, last_name
from orchestrator.source.walk import walk


def per_rank(a: Analysis, path: ast.expr) -> bool:
    """The path holds the rank (``f"ckpt_{rank}.pt"``), here or in what the script passes for it (a helper's
    parameter)."""
    if a.ranks.dependent(path):
        return True
    outer = a.outer
    return isinstance(path, ast.Name) and outer is not None and any(
        outer.ranks.dependent(arg) for arg in script_arguments(a, path))


def local_index_only(a: Reading, path: ast.expr, depth: int = 0) -> bool:
    """Every rank the path holds is a node-local one (``f"final_state{gpu}.pth"``, ``ckpt_{local_rank}.pt``): the
    processes with the same local rank on every node write the same file."""
    return _rank_kinds(a, path, depth) == {"local"}


def _rank_kinds(a: Reading, expr: ast.expr, depth: int) -> set[str]:
    """The kinds of rank (global, local, rankish) ``expr`` holds, through the names it is built from."""
    kinds: set[str] = set()
    for node in walk(expr):
        kind = a.ranks.source(node) if isinstance(node, ast.Name | ast.Attribute | ast.Call | ast.Subscript) else None
        if kind is not None:
            kinds.add(kind)
        elif isinstance(node, ast.Name) and depth < 4:
            _, value = a.module.resolve(node.id, node)
            if value is not None and value is not expr:
                kinds |= _rank_kinds(a, value, depth + 1)
    return kinds


_HOST_CALLS = frozenset({"socket.gethostname", "platform.node", "os.uname", "socket.getfqdn"})
# what names a file for its own process alone: a fresh id, the process id, a temporary file
_PROCESS_CALLS = frozenset({"uuid1", "uuid4", "getpid", "token_hex", "token_urlsafe", "token_bytes", "mkstemp",
                            "mktemp", "mkdtemp", "NamedTemporaryFile"})


def per_host(a: Reading, path: ast.expr, depth: int) -> bool:
    """The path names the machine (``os.path.join("runs", time + "_" + socket.gethostname())``, here, through
    names, or in a function of the file or the project that builds it): each node's local rank 0 writes its own
    file, so a per-node guard writes no shared one. So does the folder of a TensorBoard writer made with no
    ``log_dir`` (``SummaryWriter()``, ignite's ``TensorboardLogger(log_dir=None)``): ``runs/<time>_<hostname>``."""
    return _built_from(a, path, lambda qual: qual in _HOST_CALLS, depth) or any(
        _default_log_dir(a, node) for node in walk(path))


_WRITER = re.compile(r"SummaryWriter|Tensorboard", re.IGNORECASE)


def _default_log_dir(a: Reading, node: ast.AST) -> bool:
    """``tb_logger.writer.log_dir`` (or ``writer.get_logdir()``) of a TensorBoard writer made here with no folder."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get_logdir":
        node = node.func
    if not (isinstance(node, ast.Attribute) and node.attr in ("log_dir", "logdir", "get_logdir")):
        return False
    root: ast.expr = node.value
    while isinstance(root, ast.Attribute):
        root = root.value
    made = a.module.resolve(root.id, root)[1] if isinstance(root, ast.Name) else None
    if not (isinstance(made, ast.Call) and _WRITER.search(last_name(made.func) or "")):
        return False
    given = [*made.args[:1], *(k.value for k in made.keywords if k.arg in ("log_dir", "logdir"))]
    return all(isinstance(v, ast.Constant) and v.value is None for v in given)


def per_process(a: Analysis, path: ast.expr) -> bool:
    """The path holds a name each process draws for itself (``uuid4()``, ``os.getpid()``, ``random.choices(...)``
    with Python's random state seeded nowhere): every rank writes a file of its own."""
    unseeded = {state for state in ("random", "numpy") if state not in seeded_states(a)}

    def draws(qual: str) -> bool:
        module, _, name = qual.rpartition(".")
        return name in _PROCESS_CALLS or (module == "random" and "random" in unseeded) or (
            module in ("numpy.random", "np.random") and "numpy" in unseeded)
    return _built_from(a, path, draws, 0)


def _built_from(a: Reading, path: ast.expr, wanted: Callable[[str], bool], depth: int) -> bool:
    """A call ``wanted`` names builds the path: in it, through names, or in a function of the file or the
    project that builds it."""
    if depth > 3:
        return False
    for node in walk(path):
        if isinstance(node, ast.Call):
            qual = a.module.qualname(node.func)
            if qual is not None and wanted(qual):
                return True
            local = a.module.local_function(node)
            if local is not None and any(isinstance(n, ast.Call) and wanted(a.module.qualname(n.func) or "")
                                         for n in walk(local)):
                return True
            root = a.outer if a.outer is not None else a
            reach = root.project.reach(qual) if root.project is not None and local is None else None
            if reach is not None and any(wanted(q) for q in reach.quals):
                return True
        elif isinstance(node, ast.Name):
            _, value = a.module.resolve(node.id, node)
            value = value if value is not None else _unpacked_call(a, node)
            if value is not None and value is not path and _built_from(a, value, wanted, depth + 1):
                return True
    return False


def _unpacked_call(a: Reading, name: ast.Name) -> ast.Call | None:
    """The call ``name`` is unpacked from in its function, before it (``fd, tmp_path = tempfile.mkstemp(...)``)."""
    scope = a.module.function_of(name)
    found = [node.value for node in a.module.nodes if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
             and node.lineno < name.lineno and a.module.function_of(node) is scope
             and any(isinstance(t, ast.Tuple | ast.List) and any(isinstance(e, ast.Name) and e.id == name.id
                                                                  for e in t.elts) for t in node.targets)]
    return found[-1] if found else None


_PATH_CALLS = frozenset({"join", "Path", "joinpath", "with_suffix", "with_name", "format", "expanduser"})
# a string's methods that return an edited string: a path edited is still a path
_STRING_EDITS = frozenset({"replace", "strip", "rstrip", "lstrip", "lower", "removesuffix", "removeprefix"})
_PATH_WORDS = re.compile(r"path|file|ckpt|checkpoint|dir|fname|out", re.IGNORECASE)


def file_path(a: Reading, expr: ast.expr, depth: int) -> bool:
    """``expr`` visibly names a file (a string, an f-string, os.path.join, Path / ..., a name like
    ``ckpt_path``); a buffer (``io.BytesIO()``) or an open handle is not judged."""
    if depth > 4:
        return False
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, str)
    if isinstance(expr, ast.JoinedStr):
        return True
    if isinstance(expr, ast.IfExp):  # args.output_dir if args.output_dir else f"{name}-finetuned"
        return file_path(a, expr.body, depth + 1) or file_path(a, expr.orelse, depth + 1)
    if isinstance(expr, ast.BinOp):
        return isinstance(expr.op, ast.Add | ast.Div | ast.Mod) and (
            file_path(a, expr.left, depth + 1) or file_path(a, expr.right, depth + 1))
    if isinstance(expr, ast.Call):
        if isinstance(expr.func, ast.Attribute) and expr.func.attr in _STRING_EDITS:  # f"{n}_{k}".replace("/", "_")
            return file_path(a, expr.func.value, depth + 1)
        if last_name(expr.func) in ("str", "fspath") and len(expr.args) == 1:  # str(self.dir / f"model_{n}.pt")
            return file_path(a, expr.args[0], depth + 1)
        built_by = a.module.local_function(expr)  # self.model_name(num): a method of the file that returns the path
        if built_by is not None and not _reads_a_rank(built_by) and any(
                file_path(a, r.value, depth + 1) for r in walk(built_by)
                if isinstance(r, ast.Return) and r.value is not None):
            return True  # (one built from a rank, f"weights_tp{self.tp_rank}.pth", is each rank's own)
        return last_name(expr.func) in _PATH_CALLS
    if isinstance(expr, ast.Name | ast.Attribute):
        key = dotted(expr)
        value = a.module.resolve(key, expr)[1] if key is not None else None
        if value is not None:
            return file_path(a, value, depth + 1)
        opened = _opened_as(a, expr) if isinstance(expr, ast.Name) else None
        if opened is not None:
            return file_path(a, opened, depth + 1)
        passed = script_arguments(a, expr) if isinstance(expr, ast.Name) and a.outer is not None else []
        if any(file_path(a.outer, arg, depth + 1) for arg in passed if a.outer is not None):
            return True  # a helper's parameter the script fills with a path
        return bool(_PATH_WORDS.search(last_name(expr) or "")) or _string_flag(a, expr)
    return False


def _reads_a_rank(function: ast.AST) -> bool:
    """The function reads a rank (``self.tp_rank``, ``rank``, ``dist.get_rank()``): a path it builds is per rank."""
    return any("rank" in (last_name(n) or "").lower() for n in walk(function)
               if isinstance(n, ast.Name | ast.Attribute | ast.Call))


def _string_flag(a: Reading, expr: ast.expr) -> bool:
    """``args.save_model`` of ``parser.add_argument("--save-model", type=str, ...)``: the value handed to
    torch.save as its file is a string the user typed, a path."""
    if not isinstance(expr, ast.Attribute):
        return False
    for node in a.module.nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            flags = [x.value for x in node.args if isinstance(x, ast.Constant) and isinstance(x.value, str)]
            dest = next((k.value.value for k in node.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)),
                        None)
            names = {dest} if dest else {f.lstrip("-").replace("-", "_") for f in flags if f.startswith("--")}
            kind = next((k.value for k in node.keywords if k.arg == "type"), None)
            if expr.attr in names and isinstance(kind, ast.Name) and kind.id == "str":
                return True
    return False


def _opened_as(a: Reading, name: ast.Name) -> ast.expr | None:
    """The path of ``with open(path, "wb") as f`` (or ``PathManager.open``, ``fs.open``) around ``name``."""
    current = a.module.parents.get(name)
    while current is not None and not isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef):
        if isinstance(current, ast.With | ast.AsyncWith):
            for item in current.items:
                target, call = item.optional_vars, item.context_expr
                if isinstance(target, ast.Name) and target.id == name.id and isinstance(call, ast.Call) \
                        and last_name(call.func) == "open" and call.args:
                    return call.args[0]
        current = a.module.parents.get(current)
    return None


def path_forms(a: Analysis, expr: ast.expr) -> set[str]:
    """``expr`` and what it was assigned from (``args.load_model = init_name``), as source text."""
    out: set[str] = set()
    current: ast.expr | None = expr
    for _ in range(4):
        if current is None:
            break
        out.add(ast.dump(current))
        key = dotted(current) if isinstance(current, ast.Name | ast.Attribute) else None
        current = a.module.resolve(key, current)[1] if key is not None else None
    return out


LOADS = frozenset({"torch.load", "safetensors.torch.load_file"})
_EXISTS = frozenset({"exists", "isfile", "is_file"})
# what a checkpoint's object is named for; a data cache's (features, a data set, tokens) is named for none of these
_MODEL_STATE = re.compile(r"state|model|optim|ckpt|checkpoint|weight|param|\bnet\b|module", re.IGNORECASE)


def data_cache(a: Analysis, call: ast.Call, path: ast.expr) -> bool:
    """``call`` saves a data cache, not a checkpoint: the same function tests whether the file exists and loads it
    (built once where it is missing, then read: ``if os.path.exists(cache): data = torch.load(cache)``, else built and
    ``torch.save(data, cache)``), and the object saved is named for no model state (``encoded_dataset``). Built by
    each node's first process (``if local_rank in (-1, 0):``) it is no per-node checkpoint; built by every rank at
    once it is still DDP006 (a rank can read the file another is writing)."""
    saved = call.args[0] if call.args else None
    if saved is None or _names_state(a, saved):
        return False
    written = path_forms(a, path)
    scope: ast.AST = a.module.function_of(call) or a.module.tree
    tested = loaded = False
    for node in walk(scope):
        if not isinstance(node, ast.Call) or node is call:
            continue
        func = node.func
        args = node.args or (func.value.args if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call)
                             else [])  # Path(cache).exists()
        if not args or written.isdisjoint(path_forms(a, args[0])):
            continue
        tested = tested or last_name(func) in _EXISTS
        loaded = loaded or a.module.qualname(func) in LOADS
    return tested and loaded


def _names_state(a: Analysis, saved: ast.expr) -> bool:
    """The object saved, or what it was assigned from, is named for a model's state (``model.state_dict()``,
    ``{"optimizer": ...}``, ``checkpoint``)."""
    return any(_MODEL_STATE.search(ast.unparse(form)) for form in (saved, *_assigned(a, saved)))


def _assigned(a: Analysis, expr: ast.expr) -> list[ast.expr]:
    key = dotted(expr) if isinstance(expr, ast.Name | ast.Attribute) else None
    value = a.module.resolve(key, expr)[1] if key is not None else None
    return [value] if value is not None else []
