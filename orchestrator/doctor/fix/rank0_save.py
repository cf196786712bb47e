"""DDP006, a save to one path made by more than one rank: every rank (the save goes under
``if dist.get_rank() == 0:``, then a ``dist.barrier()`` so that no rank reads the file before rank 0 has written
it), or local rank 0 of every node (the save goes under ``if not dist.is_initialized() or dist.get_rank() == 0:``
inside the local-rank guard, where only some ranks are: no barrier there). In a script a framework runs on every
rank the guard and the barrier are the framework's own (``if accelerator.is_main_process:``, then
``accelerator.wait_for_everyone()``; ``fix/framework_guard.py``), which also hold where it runs as one process."""

from __future__ import annotations

import libcst as cst

from orchestrator.doctor.findings import Finding
from orchestrator.doctor.fix.cst import Source, dist_name, replace_in_block, statement
from orchestrator.doctor.fix.framework_guard import framework_guard

_EVERY_RANK = "runs on every rank"
_PER_NODE = "guarded by the local rank"
_SAVES = frozenset({"save", "save_pretrained"})


def fix(src: Source, finding: Finding) -> cst.Module | None:
    """Only those two findings (not the DDP wrapper saved, nor a checkpoint writer made per node), and only a
    save that is a statement of its own (``torch.save(...)`` on its line)."""
    every = _EVERY_RANK in finding.message
    if not every and _PER_NODE not in finding.message:
        return None
    calls = src.calls_at(finding.line, lambda name: name in _SAVES)
    if not calls:
        return None
    line = src.statement(calls[0])
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1 or not isinstance(line.body[0], cst.Expr):
        return None
    framework = framework_guard(src, calls[0])
    dist = dist_name(src.module)
    if framework is not None:
        test, barrier = framework.test, framework.barrier
    elif dist is not None:
        test = f"{dist}.get_rank() == 0" if every else f"not {dist}.is_initialized() or {dist}.get_rank() == 0"
        barrier = f"{dist}.barrier()"
    else:
        return None
    guard = statement(f"if {test}:\n    pass\n")
    assert isinstance(guard, cst.If) and isinstance(guard.body, cst.IndentedBlock)
    guarded = guard.with_changes(leading_lines=line.leading_lines,
                                 body=guard.body.with_changes(body=[line.with_changes(leading_lines=())]))
    block = src.block(line)
    body = list(block.body)
    at = next(i for i, stmt in enumerate(body) if stmt is line)
    body[at:at + 1] = [guarded, statement(f"{barrier}\n")] if every and barrier is not None else [guarded]
    return replace_in_block(src, block, body)
