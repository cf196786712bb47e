"""One file's analysis for the doctor's rules: the reader's (``orchestrator.source.analysis``) and the findings it
makes at a node."""

from __future__ import annotations

import ast

from orchestrator.doctor.catalog import Severity
from orchestrator.doctor.confidence import Confidence
from orchestrator.doctor.findings import ArgsConfig, Finding, make_finding
from orchestrator.source import analysis


def _snippet(node: ast.AST, limit: int = 70) -> str:
    """The code at ``node``, on one line, shortened."""
    try:
        text = " ".join(ast.unparse(node).split())
    except (ValueError, TypeError, RecursionError):
        return "?"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Analysis(analysis.Analysis):
    """The reader's analysis of one file, with the doctor's findings at its nodes."""

    def guess(self, severity: Severity) -> Severity:
        """An error that a helper nobody could read might make wrong is a warning (the severity policy)."""
        return "warning" if self.unread else severity

    def finding(self, code: str, node: ast.AST, detail: str = "", severity: Severity | None = None,
                title: str | None = None, confidence: Confidence | None = None, fact: str = "",
                marks: frozenset[str] = frozenset(), nodes: int | None = None, at: ast.AST | None = None,
                args_config: ArgsConfig | None = None) -> Finding:
        """A finding at ``node``; its evidence is the code there and ``fact`` (else ``detail``): what triggered it.
        ``at``: the part of ``node`` to change, on a later line of it (a call's ``rank=`` argument), the line named."""
        start = getattr(node, "lineno", 1)
        end = getattr(node, "end_lineno", start) or start
        span = f"lines {start}-{end}" if end > start else f"line {start}"
        evidence = f"{span}: `{_snippet(node)}`; {fact or detail}".rstrip("; ")
        line = getattr(at, "lineno", start) if at is not None else start
        return make_finding(code, self.filename, line, detail, severity, title, end, confidence, evidence, marks, nodes,
                            start_line=start, args_config=args_config)
