"""The doctor in front of a launch: what ``orch submit SCRIPT`` / ``orch run SCRIPT`` call first."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from orchestrator.doctor.check import check_files
from orchestrator.doctor.findings import Finding, format_findings, has_errors
from orchestrator.errors import OrchError


class ScriptRefused(OrchError):
    """The doctor found errors in a script about to be launched (exit 2: nothing was submitted)."""


def gate(paths: Sequence[str | Path], out: TextIO, *, refuse: bool = True) -> list[Finding]:
    """Check ``paths``, print the findings (if any) to ``out``, and raise ScriptRefused when one is an
    error and ``refuse`` (``--no-check`` and the dry run pass ``refuse=False``: they only show them).
    An unreadable script raises DoctorInputError (exit 2) either way."""
    findings = check_files(paths)
    if findings:
        print(format_findings(findings), file=out, flush=True)
    if refuse and has_errors(findings):
        codes = ", ".join(sorted({f.code for f in findings if f.severity == "error"}))
        raise ScriptRefused(f"orch doctor found errors ({codes}) in {', '.join(map(str, paths))}; nothing was "
                            "submitted",
                            hint="fix them (each finding says how), silence a false alarm on its line with "
                                 "# orch: ignore[CODE], or pass --no-check to launch anyway")
    return findings
