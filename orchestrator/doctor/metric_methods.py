"""The methods of a project's own metric objects, for DDP013: whether ``accumulator.reduce()`` reduces across the
processes is read from the method's body when its class is the project's (a ``TopKAccumulator`` whose ``reduce``
divides this process's sums), not guessed from its name; a library's metric (TorchMetrics' ``compute``) keeps the
name's reading."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from orchestrator.doctor.analysis import Analysis
from orchestrator.source.names import FunctionNode, Module, last_name

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
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and isinstance(value.func.value,
                                                                                               ast.Call):
        value = value.func.value  # ``Accumulator().to(device)``: the object made
    if not isinstance(value, ast.Call):
        return None
    module, cls = _class_of(a, value.func)
    if module is None or cls is None or any(not isinstance(b, ast.Name) or b.id != "object" for b in cls.bases):
        return None
    node = next((m for m in cls.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef) and m.name == func.attr),
                None)
    return Method(module, node) if node is not None else None


def _class_of(a: Analysis, func: ast.expr) -> tuple[Module | None, ast.ClassDef | None]:
    if isinstance(func, ast.Name) and func.id in a.module.classes:
        return a.module, a.module.classes[func.id]
    qual = a.module.qualname(func)
    project = a.project if a.outer is None else a.outer.project
    where = project.split(qual) if project is not None and qual else None
    module = project.read(where[0]) if project is not None and where is not None else None
    if module is None or where is None:
        return None, None
    return module, module.classes.get(where[1])


def body_reduces(method: Method) -> bool:
    """The method calls a collective (torch.distributed's) or something named for a reduction other than itself."""
    for call in method.module.calls_in(method.node):
        name = last_name(call.func) or ""
        if (method.module.qualname(call.func) or "").startswith("torch.distributed.") or (
                REDUCING.search(name) and name != method.node.name):
            return True
    return False
