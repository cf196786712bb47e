"""DDP001: ``torch.cuda.set_device(local_rank)`` before ``init_process_group`` (or before the first CUDA use,
when that comes first), so that each rank's CUDA context and NCCL communicator live on its own GPU; under
``if torch.cuda.is_available():`` in a script that asks that (one with a CPU path)."""

from __future__ import annotations

import libcst as cst

from orchestrator.doctor.findings import Finding
from orchestrator.doctor.fix.cst import Source, Statement, imports_name, insert, statement, with_import

_LOCAL_RANK_NAMES = ("local_rank", "LOCAL_RANK", "local_gpu", "gpu")
_ENV = 'int(os.environ["LOCAL_RANK"])'


def fix(src: Source, finding: Finding) -> cst.Module | None:
    if not imports_name(src.module, "torch"):
        return None
    anchor = _anchor(src, finding)
    if anchor is None:
        return None
    rank = _local_rank_name(src, anchor)
    bind = f"torch.cuda.set_device({rank or _ENV})"
    if src.calls(lambda name: name == "is_available"):  # a script with a CPU path keeps it: bind only with a GPU
        bind = f"if torch.cuda.is_available():\n    {bind}"
    module = insert(src, anchor, [statement(f"{bind}\n")])
    return module if rank else with_import(module, "os")


def _anchor(src: Source, finding: Finding) -> Statement | None:
    """The statement of ``init_process_group`` when it is in the function of the first CUDA use and before it (or
    in another function), else the first CUDA use's statement."""
    uses = [src.statement(c) for c in src.calls_at(finding.line, lambda name: True)]
    use = next((u for u in uses if u is not None), None)
    inits = src.calls(lambda name: name == "init_process_group")
    init = src.statement(inits[0]) if inits else None
    if init is None:
        return use
    if use is None or src.scope(init) is not src.scope(use) or src.line(init) < src.line(use):
        return init
    return use


def _local_rank_name(src: Source, anchor: Statement) -> str | None:
    """A name holding the local rank, assigned in the anchor's function (or at module level) before it."""
    scope = src.scope(anchor)
    line = src.line(anchor)
    for node in src.nodes(cst.AssignTarget):
        assert isinstance(node, cst.AssignTarget)
        target = node.target
        if (isinstance(target, cst.Name) and target.value in _LOCAL_RANK_NAMES and src.line(node) < line
                and src.scope(node) in (scope, None)):
            return target.value
    params = scope.params.params if scope is not None else ()
    return next((p.name.value for p in params if p.name.value in _LOCAL_RANK_NAMES), None)
