"""DDP007: ``destroy_process_group()`` moved out of the loop (or from before later collectives) to the end of
its function, after the last collective: the run ends with one destroy."""

from __future__ import annotations

import libcst as cst

from orchestrator.doctor.findings import Finding
from orchestrator.doctor.fix.cst import Source, code_of, replace_in_block, replace_node, statement

_DESTROY = "destroy_process_group"


def fix(src: Source, finding: Finding) -> cst.Module | None:
    """Only a destroy that is a statement of its own whose block keeps other statements, in a function (whose
    end is then the end of the run's distributed part)."""
    calls = src.calls_at(finding.line, lambda name: name == _DESTROY)
    line = src.statement(calls[0]) if calls else None
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1 or not isinstance(line.body[0], cst.Expr):
        return None
    function = src.scope(line)
    block = src.block(line)
    if function is None or len(block.body) < 2 or not isinstance(function.body, cst.IndentedBlock):
        return None
    destroy = statement(f"{code_of(src.module, calls[0])}\n")
    kept = [stmt for stmt in block.body if stmt is not line]
    if not isinstance(block, cst.IndentedBlock):
        return None
    moved = replace_node(src.module, block, block.with_changes(body=kept))
    again = Source(moved)
    [function] = [f for f in again.nodes(cst.FunctionDef) if isinstance(f, cst.FunctionDef)
                  and f.name.value == function.name.value and again.line(f) == src.line(function)]
    body = list(function.body.body) if isinstance(function.body, cst.IndentedBlock) else []
    at = len(body) - 1 if body and _returns(body[-1]) else len(body)
    body.insert(at, destroy)
    assert isinstance(function.body, cst.IndentedBlock)
    return replace_in_block(again, function.body, body)


def _returns(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, cst.Return) for s in stmt.body)
