"""The doctor in front of a launch: what ``orch submit SCRIPT`` / ``orch run SCRIPT`` call first."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from orchestrator.doctor.check import check_files
from orchestrator.doctor.findings import Finding, format_findings, has_errors
from orchestrator.errors import OrchError

if TYPE_CHECKING:
    from orchestrator.spec.script import ScriptTarget


class ScriptRefused(OrchError):
    """The doctor found errors in a script about to be launched (exit 2: nothing was launched)."""


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
                            "launched",
                            hint="fix them (each finding says how), silence a false alarm on its line with "
                                 "# orch: ignore[CODE], or pass --no-check to launch anyway")
    return findings


def check_script(target: ScriptTarget, *, refuse: bool) -> list[Finding]:
    """``gate`` for what ``orch submit``/``orch run`` were given: a ``train.py`` is checked (findings on
    stderr: stdout stays the dry run's script or JSON); ``-m module`` is not (which file runs is
    only known where it runs)."""
    if target.kind != "script":
        return []
    return gate([target.target], sys.stderr, refuse=refuse)
