"""DDP009: ``map_location="cpu"`` added to a ``torch.load(...)`` that has none, so no rank loads a checkpoint
onto GPU 0 (``load_state_dict`` copies it onto the model's own device)."""

from __future__ import annotations

import libcst as cst

from orchestrator.doctor.findings import Finding
from orchestrator.doctor.fix.cst import Source, replace_node


def fix(src: Source, finding: Finding) -> cst.Module | None:
    calls = [c for c in src.calls_at(finding.line, lambda name: name == "load")
             if not any(arg.keyword is not None and arg.keyword.value == "map_location" for arg in c.args)]
    if not calls:
        return None
    call = calls[0]
    added = cst.Arg(keyword=cst.Name("map_location"), value=cst.SimpleString('"cpu"'),
                    equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                          whitespace_after=cst.SimpleWhitespace("")))
    args = list(call.args)
    if args and isinstance(args[-1].comma, cst.Comma):  # a trailing comma (one argument a line): keep the layout
        added = added.with_changes(comma=args[-1].comma)
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    new = call.with_changes(args=[*args, added])
    return replace_node(src, call, new)
