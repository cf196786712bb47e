"""DDP006 (every rank saving to one path): the save under ``if dist.get_rank() == 0:``, then a
``dist.barrier()`` so that no rank reads the file before rank 0 has written it."""

from __future__ import annotations

import libcst as cst

from orchestrator.doctor.findings import Finding
from orchestrator.doctor.fix.cst import Source, dist_name, replace_in_block, statement

_EVERY_RANK = "runs on every rank"
_SAVES = frozenset({"save", "save_pretrained"})


def fix(src: Source, finding: Finding) -> cst.Module | None:
    """Only the finding of a save that every rank runs (not the DDP wrapper saved, nor a per-node guard), and
    only a save that is a statement of its own (``torch.save(...)`` on its line)."""
    if _EVERY_RANK not in finding.message:
        return None
    dist = dist_name(src.module)
    calls = src.calls_at(finding.line, lambda name: name in _SAVES)
    if dist is None or not calls:
        return None
    line = src.statement(calls[0])
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1 or not isinstance(line.body[0], cst.Expr):
        return None
    guard = statement(f"if {dist}.get_rank() == 0:\n    pass\n")
    assert isinstance(guard, cst.If) and isinstance(guard.body, cst.IndentedBlock)
    guarded = guard.with_changes(leading_lines=line.leading_lines,
                                 body=guard.body.with_changes(body=[line.with_changes(leading_lines=())]))
    barrier = statement(f"{dist}.barrier()\n")
    block = src.block(line)
    body = list(block.body)
    at = next(i for i, stmt in enumerate(body) if stmt is line)
    body[at:at + 1] = [guarded, barrier]
    return replace_in_block(src, block, body)
