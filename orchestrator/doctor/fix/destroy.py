"""DDP007: ``destroy_process_group()`` moved out of the loop (or from before later collectives) into a
``finally`` around what follows ``init_process_group`` in its function (:mod:`.tryfinally`): the run ends with
one destroy, also when training fails. Where that ``finally`` cannot be written safely (the init in another
function or under a condition), to the end of its function, after the last collective."""

from __future__ import annotations

import libcst as cst

from orchestrator.doctor.findings import Finding
from orchestrator.doctor.fix.cst import Source, code_of, replace_in_block, replace_node, statement
from orchestrator.doctor.fix.tryfinally import NoFix, wrap

_DESTROY = "destroy_process_group"


def fix(src: Source, finding: Finding) -> cst.Module | None:
    """Only a destroy that is a statement of its own whose block keeps other statements."""
    calls = src.calls_at(finding.line, lambda name: name == _DESTROY)
    line = src.statement(calls[0]) if calls else None
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1 or not isinstance(line.body[0], cst.Expr):
        return None
    function = src.scope(line)
    block = src.block(line)
    if len(block.body) < 2:
        return None
    destroy = code_of(src.module, calls[0])
    kept = [stmt for stmt in block.body if stmt is not line]
    again = Source(replace_in_block(src, block, kept))
    if function is None:
        return wrap(again, None, destroy)  # a module-level destroy: in a finally, or not fixed (NoFix: why)
    moved = _same(again, function.name.value, src.line(function))
    if moved is None:
        return None
    try:
        return wrap(again, moved, destroy)
    except NoFix:
        pass
    if not isinstance(moved.body, cst.IndentedBlock):
        return None
    body = list(moved.body.body)
    at = len(body) - 1 if body and _returns(body[-1]) else len(body)
    body.insert(at, statement(f"{destroy}\n"))
    return replace_node(again, moved.body, moved.body.with_changes(body=body))


def _same(src: Source, name: str, line: int) -> cst.FunctionDef | None:
    """The function ``name`` at ``line`` in the module after an edit below its first line."""
    return next((f for f in src.nodes(cst.FunctionDef) if isinstance(f, cst.FunctionDef)
                 and f.name.value == name and src.line(f) == line), None)


def _returns(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, cst.Return) for s in stmt.body)
