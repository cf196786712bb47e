"""The doctor in front of a launch: what ``orch submit SCRIPT`` / ``orch run SCRIPT`` call first."""

from __future__ import annotations

import sys
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from orchestrator.doctor.check import check_files, dedupe
from orchestrator.doctor.findings import DoctorSkipped, Finding, format_findings, has_errors
from orchestrator.errors import OrchError

if TYPE_CHECKING:
    from orchestrator.spec.script import ScriptTarget


class ScriptRefused(OrchError):
    """The doctor found errors in a script about to be launched (exit 2: nothing was launched)."""


_SILENCE = ("fix them (each finding says how), silence a false alarm with # orch: ignore[CODE] on its line, "
            "--ignore CODE or doctor: {ignore: [CODE]} in cluster.yaml, or pass --no-check to launch anyway")


def gate(paths: Sequence[str | Path], out: TextIO, *, refuse: bool = True, ignore: Collection[str] = (),
         would_refuse: str | None = None) -> list[Finding]:
    """Check ``paths``, drop the codes in ``ignore``, print the findings (if any) to ``out``, and raise
    ScriptRefused when one is an error and ``refuse`` (``--no-check`` and the dry run pass
    ``refuse=False``: they only show them; the dry run passes ``would_refuse="orch submit"`` and gets the
    line saying so). An unreadable script raises DoctorInputError (exit 2) either way."""
    checked: list[Finding] = []
    for path in paths:
        try:
            checked.extend(check_files([path]))
        except DoctorSkipped as exc:  # cannot be parsed (too deep, too large, not a file): said, not checked
            print(exc.warning(), file=out, flush=True)
    findings = [f for f in dedupe(checked) if f.code not in ignore]
    if findings:
        print(format_findings(findings), file=out, flush=True)
    if not has_errors(findings):
        return findings
    codes = ", ".join(sorted({f.code for f in findings if f.severity == "error"}))
    if refuse:
        raise ScriptRefused(f"orch doctor found errors ({codes}) in {', '.join(map(str, paths))}; nothing was "
                            "launched", hint=_SILENCE)
    if would_refuse:
        print(f"{would_refuse} would refuse this script: orch doctor found errors ({codes}); {_SILENCE}",
              file=out, flush=True)
    return findings


def check_script(target: ScriptTarget, *, refuse: bool, ignore: Collection[str] = (),
                 would_refuse: str | None = None) -> list[Finding]:
    """``gate`` for what ``orch submit``/``orch run`` were given: a ``train.py`` is checked (findings on
    stderr: stdout stays the dry run's script or JSON); ``-m package.module`` is checked when it is a file
    of the working directory's project (an installed module is not: which file runs is only known where
    it runs)."""
    from orchestrator.spec.script import find_module

    path = Path(target.target) if target.kind == "script" else find_module(target.target, [Path(target.cwd)])
    if path is None:
        return []
    return gate([path], sys.stderr, refuse=refuse, ignore=ignore, would_refuse=would_refuse)
