"""The methods of the project's own classes, read from their bodies rather than guessed from their names: whether
``accumulator.reduce()`` reduces across the processes (DDP013: a ``TopKAccumulator`` whose ``reduce`` divides this
process's sums does not), whether ``engine.save_and_link_checkpoint()`` writes a file (DDP006: it reaches a
``torch.save``). A library's object (TorchMetrics' metric, a framework's saver) keeps the reading of its method's name.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.framework_saves import WRITERS
from orchestrator.source.exprnames import FunctionNode, last_name
from orchestrator.source.names import Module
from orchestrator.source.walk import walk

_WRITE_DEPTH = 3
# a call whose name says it reduces or gathers across the processes
REDUCING = re.compile(r"reduce|gather|synchroni[sz]e|(^|_)sync($|_)|accumulate_across|mean_across", re.IGNORECASE)


@dataclass(frozen=True)
class Method:
    module: Module
    node: FunctionNode


def own_method(a: Analysis, call: ast.Call) -> Method | None:
    """The method ``obj.method(...)`` calls where ``obj`` is made from a class of this file or of the project's
    modules (``acc = TopKAccumulator(k=10)``, then ``acc.reduce()``); None when its class is not one (a library's
    metric, not followed) or inherits from one (the method, and a sync, may be in a base not read)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return None
    _, value = a.module.resolve(func.value.id, func.value)
    if value is None:  # ``with Engine(...) as engine:``
        value = next(iter(entered(a, func.value)), None)
    if not isinstance(value, ast.Call):
        return None
    module, cls = _class_of(a, unchained(value).func)  # ``Accumulator().to(device)``: the object made
    if module is None or cls is None or any(not isinstance(b, ast.Name) or b.id != "object" for b in cls.bases):
        return None
    node = _method(cls, func.attr)
    return Method(module, node) if node is not None else None


def defined_method(a: Analysis, call: ast.Call) -> Method | None:
    """The method ``obj.method(...)`` calls where ``obj`` is made from a project class that defines that method
    itself, whatever it is built on (ECAPA-TDNN's ``ECAPAModelDDP(nn.Module).train_network``): what its own body
    does, not what a base may add."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return None
    _, value = a.module.resolve(func.value.id, func.value)
    module, cls = _class_of(a, unchained(value).func) if isinstance(value, ast.Call) else (None, None)
    node = _method(cls, func.attr) if module is not None and cls is not None else None
    return Method(module, node) if module is not None and node is not None else None


def self_method(a: Analysis, call: ast.Call) -> Method | None:
    """The method ``self.method(...)`` calls, where the class around the call defines it (CLIP-ViL's
    ``self.save("BEST")`` in ``VQA.train``); None elsewhere."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
        return None
    function = a.module.function_of(call)
    cls = a.module.parents.get(function) if function is not None else None
    node = _method(cls, func.attr) if isinstance(cls, ast.ClassDef) else None
    return Method(a.module, node) if node is not None else None


def writer_method(a: Analysis, call: ast.Call) -> Method | None:
    """The project's own method ``call`` runs (``saver.save(...)``, ``self.save(...)``) where it writes a checkpoint."""
    method = own_method(a, call) or self_method(a, call)
    return method if method is not None and writes(method) else None


def unchained(call: ast.Call) -> ast.Call:
    """The call a chain of method calls starts from (``torchmetrics.Accuracy(...).to(device)``: the object made)."""
    while isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call):
        call = call.func.value
    return call


def reached_methods(start: FunctionNode, methods: dict[str, FunctionNode], depth: int) -> list[FunctionNode]:
    """``start`` and the methods of ``methods`` (a class's, by name) it calls as ``self.X(...)``, and those they call,
    ``depth`` calls deep, each once."""
    out, frontier = [start], [start]
    for _ in range(depth):
        following: list[FunctionNode] = []
        for function in frontier:
            for node in walk(function):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"
                        and node.func.attr in methods and methods[node.func.attr] not in out):
                    out.append(methods[node.func.attr])
                    following.append(methods[node.func.attr])
        frontier = following
    return out


def _method(cls: ast.ClassDef, name: str) -> FunctionNode | None:
    return next((m for m in cls.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef) and m.name == name), None)


def _class_of(a: Analysis, func: ast.expr) -> tuple[Module | None, ast.ClassDef | None]:
    if isinstance(func, ast.Name) and func.id in a.module.classes:
        return a.module, a.module.classes[func.id]
    qual = a.module.qualname(func)
    project = a.script_project
    where = project.split(qual) if project is not None and qual else None
    module = project.read(where[0]) if project is not None and where is not None else None
    if module is None or where is None:
        return None, None
    return module, module.classes.get(where[1])


def entered(a: Analysis, name: ast.Name) -> list[ast.expr]:
    """What ``with EXPR as name:`` binds ``name`` to in its function (``with tqdm(loader) as bar:``)."""
    scope: ast.AST = a.module.function_of(name) or a.module.tree
    return [item.context_expr for node in walk(scope) if isinstance(node, ast.With | ast.AsyncWith)
            for item in node.items if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == name.id]


def writes(method: Method, depth: int = 0) -> bool:
    """The method writes a checkpoint: it calls ``torch.save`` (or safetensors' ``save_file``), itself or through
    the methods of its class it calls on ``self``."""
    if depth > _WRITE_DEPTH:
        return False
    cls = method.module.parents.get(method.node)
    for call in method.module.calls_in(method.node):
        if (method.module.qualname(call.func) or "") in WRITERS:
            return True
        func = call.func
        if isinstance(cls, ast.ClassDef) and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id == "self":
            inner = _method(cls, func.attr)
            if inner is not None and writes(Method(method.module, inner), depth + 1):
                return True
    return False


def body_reduces(method: Method) -> bool:
    """The method calls a collective (torch.distributed's) or something named for a reduction other than itself."""
    for call in method.module.calls_in(method.node):
        name = last_name(call.func) or ""
        if (method.module.qualname(call.func) or "").startswith("torch.distributed.") or (
                REDUCING.search(name) and name != method.node.name):
            return True
    return False
