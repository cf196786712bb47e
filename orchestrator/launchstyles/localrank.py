"""The legacy ``--local_rank``/``--local-rank`` flag as a fact: where a file of the script's project declares it, when
the project takes the local rank from that flag alone (its value is read, ``LOCAL_RANK`` is never read from the
environment, the declaration is not only for old torch versions). Such a script is written for
``torch.distributed.launch`` (the ``local-rank-arg`` style); the doctor reports the same declarations (DDP015).

torchrun and orch's launcher pass no such flag (nor does ``torch.distributed.launch --use-env``): they set
``LOCAL_RANK`` in the environment.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from orchestrator.source.analysis import Analysis
from orchestrator.source.argflags import local_rank_attributes
from orchestrator.source.exprnames import dotted
from orchestrator.source.project import MAX_BYTES
from orchestrator.source.walk import walk
from orchestrator.spec.launch import LOCAL_RANK_FLAGS
from orchestrator.spec.pysource import UnreadableSource, parse_source

_VERSION = re.compile(r"version|VERSION|__version__")
_MAX_SCANNED = 400  # .py files of the project's packages searched for a read of the flag's value


@dataclass(frozen=True)
class FlagDeclaration:
    """``parser.add_argument("--local_rank", type=int, default=0)`` at ``file``:``line``."""

    file: str
    line: int
    flag_source: str  # the flag as written (``"--local_rank"``)
    what: str  # "is required", "defaults to 0", "defaults to None"
    required: bool
    node: ast.Call = field(compare=False, repr=False)


def declarations(a: Analysis, *, packages: bool = False) -> list[FlagDeclaration]:
    """The declarations of the flag in ``a``'s file that decide the local rank: none when the project (the
    script and the project modules it calls, as read) never reads the flag's value or reads ``LOCAL_RANK`` from
    the environment anywhere; a declaration only for old torch versions does not count. ``packages``: a read of
    the value in another module of the project's own packages counts too (``_read_in_packages``)."""
    sites = [node for node in a.module.nodes if isinstance(node, ast.Call) and spelling(node)]
    if not sites:
        return []
    trees = _project_trees(a)
    if any(_reads_local_rank(tree) for tree in trees) and not _flag_binds_device(trees):
        return []
    if not _flag_used(trees) and not (packages and _read_in_packages(a.outer if a.outer is not None else a)):
        return []
    out: list[FlagDeclaration] = []
    for call in sites:
        if _version_guarded(a, call):
            continue
        default = next((k.value for k in call.keywords if k.arg == "default"), None) or (
            call.args[1] if _absl(call) and len(call.args) > 1 else None)  # DEFINE_integer(name, default, help)
        required = any(k.arg == "required" and isinstance(k.value, ast.Constant) and k.value.value
                       for k in call.keywords)
        what = "is required" if required else (
            f"defaults to {ast.unparse(default)}" if default is not None else "defaults to None")
        first = call.args[0]
        aliased = isinstance(first, ast.Constant) and first.value not in LOCAL_RANK_FLAGS and not _absl(call)
        out.append(FlagDeclaration(a.filename, getattr(call, "lineno", 1),  # "--rank", "--local_rank": the latter
                                   repr(spelling(call)) if aliased else ast.unparse(first), what, required, call))
    return out


def _absl(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr.startswith("DEFINE_")


def declared_flag(tree: ast.Module | None) -> str | None:
    """The first spelling of ``--local_rank``/``--local-rank`` an ``add_argument`` of ``tree`` declares."""
    if tree is None:
        return None
    return next((flag for node in walk(tree) if isinstance(node, ast.Call) and (flag := spelling(node))), None)


def hf_arguments(tree: ast.Module | None) -> bool:
    """``tree`` imports transformers' ``TrainingArguments`` (or ``Seq2SeqTrainingArguments``, ``HfArgumentParser``):
    its ``training_args.local_rank`` is the field transformers fills from ``LOCAL_RANK``, the node-local rank."""
    return tree is not None and any(
        isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "transformers"
        and any(alias.name in _HF_ARGUMENTS for alias in node.names) for node in walk(tree))


_HF_ARGUMENTS = frozenset({"TrainingArguments", "Seq2SeqTrainingArguments", "HfArgumentParser"})


def spelling(call: ast.Call) -> str | None:
    """The spelling of ``--local_rank``/``--local-rank`` that ``call`` (an ``add_argument``, absl's ``flags.DEFINE_*``,
    or a flag's spec given to ``add_argument`` later: a list of spellings with a default or type) declares: its first
    such constant argument (``add_argument("--local_rank", "--local-rank")`` declares ``--local_rank``)."""
    name = call.args[0].value if _absl(call) and call.args and isinstance(call.args[0], ast.Constant) else None
    if isinstance(name, str) and f"--{name}" in LOCAL_RANK_FLAGS:
        return f"--{name}"  # absl's flags.DEFINE_integer("local_rank", 0, ...): --local_rank=N parses
    if call.args and isinstance(call.args[0], ast.List | ast.Tuple) and {k.arg for k in call.keywords} & {
            "default", "type"}:  # a flag's spec handed to add_argument later: PICK's CustomArgs(['--local_rank'], ...)
        return next((str(x.value) for x in call.args[0].elts
                     if isinstance(x, ast.Constant) and x.value in LOCAL_RANK_FLAGS), None)
    bound = isinstance(call.func, ast.Name) and {k.arg for k in call.keywords} & {"default", "type", "action"}
    if not ((isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument") or bound):
        return None  # (``bound``: a name bound to it, ``arg = parser.add_argument``; ``arg("--local_rank", type=int)``)
    return next((str(x.value) for x in call.args if isinstance(x, ast.Constant) and x.value in LOCAL_RANK_FLAGS), None)


def _project_trees(a: Analysis) -> list[ast.Module]:
    """The script's and the local modules' of its project that were read (the helpers it calls)."""
    return [module.tree for module in a.read_modules()]


def _flag_used(trees: list[ast.Module]) -> bool:
    """The flag's value is read somewhere (``args.local_rank``, ``config.LOCAL_RANK``, ``opt["local_rank"]``;
    ``args.rank`` where ``add_argument("--rank", "--local_rank")`` names it so): a flag declared only so that the old
    launcher's argument parses is harmless, as is one only exported as ``LOCAL_RANK`` where the environment has none
    (Neural_Koopman_pooling's ``if 'LOCAL_RANK' not in os.environ: os.environ['LOCAL_RANK'] = str(arg.local_rank)``:
    under orch or torchrun the launcher's value stays)."""
    others = frozenset().union(*(local_rank_attributes(tree) for tree in trees))
    for tree in trees:
        exported = {id(n) for stmt in walk(tree) if _exports_local_rank(stmt) for n in walk(stmt)}
        for node in walk(tree):
            if id(node) in exported:
                continue  # os.environ["LOCAL_RANK"] = str(args.local_rank): the launcher's own value wins under it
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and (
                    node.attr in ("local_rank", "LOCAL_RANK") or (node.attr in others
                                                                  and isinstance(node.value, ast.Name))):
                return True
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and (
                    node.slice.value == "local_rank") and isinstance(node.ctx, ast.Load):
                return True
    return False


def _reads_local_rank(tree: ast.AST) -> bool:
    """``LOCAL_RANK`` read from the environment somewhere in ``tree``."""
    return any(_env_use(node, tree) for node in walk(tree)
               if isinstance(node, ast.Constant) and node.value == "LOCAL_RANK")


def _flag_binds_device(trees: list[ast.Module]) -> bool:
    """The flag's value binds the GPU (``torch.cuda.set_device(args.local_rank)``, ``DDP(model,
    device_ids=[args.local_rank])``) and nothing fills it from the environment (no ``args.local_rank = ...``, no
    default that reads it): a ``LOCAL_RANK`` read elsewhere (a print, another device) does not make the flag
    optional, since without it every process binds GPU 0 (METRO's ``run_metro_bodymesh.py``)."""
    binds = False
    for tree in trees:
        for node in walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "local_rank" and isinstance(node.ctx, ast.Store):
                return False
            if isinstance(node, ast.Call) and spelling(node) and any(
                    "environ" in ast.unparse(k.value) or "LOCAL_RANK" in ast.unparse(k.value)
                    for k in node.keywords if k.arg == "default"):
                return False
            if isinstance(node, ast.Call):
                bound = [*node.args[:1]] if (dotted(node.func) or "").endswith("set_device") else [
                    e for k in node.keywords if k.arg == "device_ids" and isinstance(k.value, ast.List | ast.Tuple)
                    for e in k.value.elts]
                binds = binds or any(isinstance(e, ast.Attribute) and e.attr == "local_rank" for e in bound)
    return binds


def _read_in_packages(root: Analysis) -> bool:
    """The flag's value read in a module of the project's own packages that no call of the script reached, and
    ``LOCAL_RANK`` read from the environment in none of them: the trainer a registry imports by its name
    (Pythia's ``importlib.import_module("pythia.trainers." + name)``, then ``training_parameters.local_rank``)."""
    project = root.project
    if project is None:
        return False
    read = {path for path, _ in project.helpers()}
    folders = sorted({f for path in read if (f := project.package_folder(path)) is not None})
    files = [p for folder in folders for p in sorted(folder.rglob("*.py")) if p.resolve() not in read]
    used = False
    for path in files[:_MAX_SCANNED]:
        try:
            data = path.read_bytes() if path.stat().st_size <= MAX_BYTES else b""
            tree = parse_source(data, str(path)) if b"local_rank" in data or b"LOCAL_RANK" in data else None
        except (OSError, UnreadableSource):
            continue
        if tree is not None and _reads_local_rank(tree):
            return False
        used = used or (tree is not None and _flag_used([tree]))
    return used


def _env_use(constant: ast.Constant, tree: ast.AST) -> bool:
    """``"LOCAL_RANK"`` as an environment key that is read (a subscript load, ``.get``/``getenv``, an ``in``
    test), not written (``os.environ["LOCAL_RANK"] = ...``) nor a mere string (a config key, a message)."""
    for node in walk(tree):
        if isinstance(node, ast.Subscript) and node.slice is constant:
            return isinstance(node.ctx, ast.Load) and "environ" in ast.unparse(node.value)
        if isinstance(node, ast.Call) and constant in node.args[:1]:
            return bool(re.search(r"environ|getenv", ast.unparse(node.func)))
        if isinstance(node, ast.Compare) and node.left is constant:
            return any(isinstance(op, ast.In | ast.NotIn) for op in node.ops) and not _fills_in(node, tree)
        if isinstance(node, ast.Tuple | ast.List | ast.Set) and constant in node.elts:
            # for v in ("LOCAL_RANK", "SLURM_LOCALID"): if v in os.environ: local_rank = int(os.environ[v])
            # or env2int(["OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK"]) with os.environ.get(e) inside
            return any((isinstance(n, ast.Subscript) and not isinstance(n.slice, ast.Constant)
                        and "environ" in ast.unparse(n.value))
                       or (isinstance(n, ast.Call) and n.args and not isinstance(n.args[0], ast.Constant)
                           and bool(re.search(r"environ\.get|getenv", ast.unparse(n.func))))
                       for n in walk(tree))
    return False


def _exports_local_rank(stmt: ast.AST) -> bool:
    """``os.environ["LOCAL_RANK"] = ...`` under an ``if "LOCAL_RANK" not in os.environ:`` (``_fills_in``)."""
    return isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Compare) and isinstance(
        stmt.test.left, ast.Constant) and stmt.test.left.value == "LOCAL_RANK" and any(
        isinstance(op, ast.NotIn) for op in stmt.test.ops) and _fills_in(stmt.test, stmt)


def _fills_in(test: ast.Compare, tree: ast.AST) -> bool:
    """``if "LOCAL_RANK" not in os.environ: os.environ["LOCAL_RANK"] = str(args.local_rank)``: the test only guards
    an export of the flag's value (the local rank still comes from the flag), no read of the launcher's."""
    for node in walk(tree):
        if isinstance(node, ast.If) and node.test is test and not node.orelse:
            return all(isinstance(s, ast.Assign) and all(
                isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and t.slice.value == "LOCAL_RANK"
                and "environ" in ast.unparse(t.value) for t in s.targets) for s in node.body)
    return False


def _version_guarded(a: Analysis, node: ast.AST) -> bool:
    current = a.module.parents.get(node)
    while current is not None:
        if isinstance(current, ast.If) and _VERSION.search(ast.unparse(current.test)):
            return True
        current = a.module.parents.get(current)
    return False
