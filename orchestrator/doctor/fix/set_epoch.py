"""DDP004: ``sampler.set_epoch(epoch)`` as the first statement of the epoch loop, for a shuffling
DistributedSampler that nothing tells the epoch."""

from __future__ import annotations

import re

import libcst as cst

from orchestrator.doctor.findings import Finding
from orchestrator.doctor.fix.cst import Source, code_of, insert, statement

_EPOCH = re.compile(r"epoch|^ep$", re.IGNORECASE)
_COUNTERS = frozenset({"range", "trange", "tqdm"})


def fix(src: Source, finding: Finding) -> cst.Module | None:
    """None when the sampler has no name the loop can reach, or no ``for epoch in ...`` loop follows it in the
    same function (a sampler made in a helper that returns the loader)."""
    calls = src.calls_at(finding.line, lambda name: name.endswith("DistributedSampler"))
    if not calls:
        return None
    made = calls[0]
    value: cst.CSTNode = made
    parent = src.parent(made)
    if isinstance(parent, cst.IfExp):  # DistributedSampler(data) if distributed else None: set_epoch when it is one
        value = parent
    sampler = _sampler_expr(src, made, value)
    if sampler is None:
        return None
    loop = _epoch_loop(src, made, sampler)
    if loop is None:
        return None
    epoch = code_of(src.module, loop.target)
    body = loop.body
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return None
    first = body.body[0]
    assert isinstance(first, cst.SimpleStatementLine | cst.BaseCompoundStatement)
    call = f"{sampler}.set_epoch({epoch})"
    if value is not made:
        call = f"if isinstance({sampler}, {code_of(src.module, made.func)}):\n    {call}"
    return insert(src, first, [statement(f"{call}\n")])


def _sampler_expr(src: Source, made: cst.Call, value: cst.CSTNode) -> str | None:
    """``sampler`` (``sampler = DistributedSampler(...)``, ``sampler, shuffle = DistributedSampler(...), False``),
    ``self.sampler``, or ``loader.sampler`` for a sampler made inside
    ``loader = DataLoader(..., sampler=DistributedSampler(...))``."""
    parent = src.parent(value)
    if isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == "sampler":
        loader = src.parent(parent)
        target = _assigned(src, loader) if isinstance(loader, cst.Call) else None
        return f"{target}.sampler" if target is not None else None
    return _assigned(src, value)


def _assigned(src: Source, value: cst.CSTNode) -> str | None:
    parent = src.parent(value)
    target: cst.BaseExpression
    if isinstance(parent, cst.Element):  # one of a tuple assigned to a tuple of names
        values, holder = src.parent(parent), src.parent(src.parent(parent) or parent)
        if not (isinstance(values, cst.Tuple) and isinstance(holder, cst.Assign) and len(holder.targets) == 1):
            return None
        names = holder.targets[0].target
        at = next(i for i, element in enumerate(values.elements) if element is parent)
        if not isinstance(names, cst.Tuple) or len(names.elements) != len(values.elements):
            return None
        target = names.elements[at].value
    elif isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        target = parent.targets[0].target
    elif isinstance(parent, cst.AnnAssign):
        target = parent.target
    else:
        return None
    if isinstance(target, cst.Name) or (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)):
        return code_of(src.module, target)
    return None


def _epoch_loop(src: Source, made: cst.Call, sampler: str) -> cst.For | None:
    """The first ``for <epoch> in ...`` after the sampler, in its function (for ``self.x``, in its class)."""
    line = src.line(made)
    scope = src.scope(made)
    cls = next((a for a in src.ancestors(made) if isinstance(a, cst.ClassDef)), None)
    for node in src.nodes(cst.For):
        assert isinstance(node, cst.For)
        if src.line(node) <= line or not isinstance(node.target, cst.Name) or not _epochs(node):
            continue
        same = src.scope(node) is scope
        if sampler.startswith("self.") and cls is not None:
            same = cls in src.ancestors(node)
        if same:
            return node
    return None


def _epochs(loop: cst.For) -> bool:
    """``for epoch in ...`` (``ep``, ``n_epoch``), or ``for i in range(...)`` around another loop (the batches)."""
    assert isinstance(loop.target, cst.Name)
    if _EPOCH.search(loop.target.value):
        return True
    counts = isinstance(loop.iter, cst.Call) and isinstance(loop.iter.func, cst.Name) and (
        loop.iter.func.value in _COUNTERS)
    return counts and isinstance(loop.body, cst.IndentedBlock) and any(
        isinstance(stmt, cst.For) for stmt in loop.body.body)
