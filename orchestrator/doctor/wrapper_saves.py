"""The DDP wrapper's state saved (its keys start with ``module.``), for DDP006: which save holds it, and whether the
project copes with the prefix (a loader that strips it), where saving the wrapper is no pitfall."""

from __future__ import annotations

import ast
import weakref

from orchestrator.source.analysis import Analysis as Reading
from orchestrator.source.exprnames import last_name
from orchestrator.source.project import MAX_BYTES
from orchestrator.source.syspath import holds
from orchestrator.source.walk import walk

# the prefix as a string literal, in either quote: ``k.replace("module.", "")``, ``k.startswith('module.')``
_PREFIX_LITERALS = (b"'module.'", b'"module."')
# per file read: whether it (or a project module it imports) handles the prefix, worked out once for all its saves
_KNOWN: weakref.WeakKeyDictionary[Reading, bool] = weakref.WeakKeyDictionary()


def knows_prefix(a: Reading) -> bool:
    """The file (or a project module it imports) handles the wrapper's ``"module."`` key prefix
    (Chinese-CLIP's ``resize_pos_embed(sd, model, prefix="module.")``, ``k.replace("module.", "")``). A file that only
    loads its checkpoints back into the wrapper itself (the DDP tutorial's ``ddp_model.load_state_dict(torch.load(
    path))``) is still reported: the file holds ``module.`` keys that no model but a wrapper loads (the seed fixtures
    expect it)."""
    if a not in _KNOWN:
        _KNOWN[a] = any(isinstance(n, ast.Constant) and n.value == "module." for n in a.module.nodes) or (
            _project_strips(a))
    return _KNOWN[a]


def _project_strips(a: Reading) -> bool:
    """A project module the file (or its script) imports names the prefix as a string (Seg_model's
    ``from utils.model_utils import *``, whose ``load_weights`` does ``if k.startswith('module.'): k = k[7:]``): the
    project loads what it saved. A module too large to read may."""
    project = a.script_project
    if project is None:
        return False
    paths = {*project.imported(a.module), *(project.imported(a.outer.module) if a.outer is not None else ())}
    return any(holds(path, _PREFIX_LITERALS, MAX_BYTES) for path in paths)


def saved_wrapper(a: Reading, expr: ast.expr, depth: int = 0) -> str | None:
    """The name of the DDP wrapper ``expr`` saves (itself or its state_dict()), if it does; in a helper also the
    parameter the script fills with its wrapper (``save_model(net, ...)`` after ``net = DDP(net)``), through the names
    the saved value is built from there (``sd = net.state_dict()``, ``state = {"model": sd}``)."""
    rewritten = _rewritten_keys(expr)
    for node in walk(expr):
        if id(node) in rewritten:
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "state_dict":
            # through names only the helper's parameter counts: a script's `state = dict(model=model.state_dict())`
            # is a resume checkpoint the script loads back into its wrapper (judged no pitfall in the corpus)
            if (a.wrapped(node.func.value) and not depth) or _passed_wrapper(a, node.func.value):
                return ast.unparse(node.func.value)
        elif isinstance(node, ast.Name) and a.wrapped(node) and not depth:
            parent = a.module.parents.get(node)
            # handed to a function, the wrapper is not what is saved: what it returns is (``get_module(model,
            # distributed).state_dict()``, ``accelerator.unwrap_model(model)``), but as a dict's value
            handed = node is not expr and isinstance(parent, ast.Call) and last_name(parent.func) != "dict"
            if not isinstance(parent, ast.Attribute) and not handed:
                return node.id
        elif isinstance(node, ast.Name) and depth < 2 and a.outer is not None:
            _, value = a.module.resolve(node.id, node)
            found = saved_wrapper(a, value, depth + 1) if isinstance(value, ast.Dict | ast.Call) else None
            if found is not None:
                return found
    return None


def _rewritten_keys(expr: ast.expr) -> set[int]:
    """The parts of a saved value whose keys are not the wrapper's: a dict comprehension that rewrites each key
    (``{".".join(k.split(".")[1:]): v for k, v in model.state_dict().items()}``), and the other side of an if/else
    whose one side unwraps (``model.module.state_dict() if world_size > 1 else model.state_dict()``: the else is the
    run without a wrapper)."""
    out: set[int] = set()
    for node in walk(expr):
        if isinstance(node, ast.DictComp) and not isinstance(node.key, ast.Name):
            out.update(id(n) for n in walk(node))
        elif isinstance(node, ast.IfExp):
            for side, other in ((node.body, node.orelse), (node.orelse, node.body)):
                if _unwraps(side):
                    out.update(id(n) for n in walk(other))
    return out


def _unwraps(expr: ast.expr) -> bool:
    return any((isinstance(n, ast.Attribute) and n.attr == "module") or (
        isinstance(n, ast.DictComp) and not isinstance(n.key, ast.Name)) for n in walk(expr))


def _passed_wrapper(a: Reading, expr: ast.expr) -> bool:
    """``expr`` is a parameter of a helper's function that every call of it in the script fills with the DDP
    wrapper (``save_model(net, optimizer, epoch, work_dir)`` where the script's ``net`` is ``DDP(...)``)."""
    function = a.module.function_of(expr)
    if a.outer is None or function is None or not isinstance(expr, ast.Name):
        return False
    params = [p.arg for p in function.args.args]
    if expr.id not in params or params[:1] == ["self"]:
        return False
    unwraps = any((isinstance(n, ast.Attribute) and n.attr == "module" and isinstance(n.value, ast.Name)
                   and n.value.id == expr.id) or (isinstance(n, ast.Constant) and n.value == "module")
                  for n in walk(function))  # `if hasattr(model, "module"): sd = model.module.state_dict()`
    if unwraps:
        return False
    passed = a.outer.passes_for(function, expr.id)
    return bool(passed) and not knows_prefix(a.outer) and all(_ddp_wrapped(a.outer, p) for p in passed)


def _ddp_wrapped(a: Reading, expr: ast.expr) -> bool:
    """``expr`` is (a name bound to) ``DDP(...)``, whose state_dict keys start with ``module.`` (FSDP's do not)."""
    _, value = a.module.resolve(expr.id, expr) if isinstance(expr, ast.Name) else (False, None)
    return isinstance(value, ast.Call) and "DistributedDataParallel" in (a.module.qualname(value.func) or "")
