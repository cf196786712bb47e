"""What the doctor reports: findings, their text and JSON forms, and the exit code they mean."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from orchestrator.doctor.catalog import CATALOG, Severity
from orchestrator.errors import OrchError


class DoctorInputError(OrchError):
    """A file the doctor cannot read or parse (exit 2, with the place of a syntax error)."""


class DoctorSkipped(DoctorInputError):
    """A file the doctor cannot take in (nested or long beyond what the parser can hold, not a regular
    file, too large): skipped with a warning, never a traceback or a hang."""

    def warning(self) -> str:
        return f"orch doctor: warning: {self.message}; not checked"


@dataclass(frozen=True, order=True)
class Finding:
    file: str
    line: int
    code: str
    severity: Severity
    message: str
    fix: str
    end_line: int = field(default=0, compare=False, repr=False)  # last line of the statement (suppression)

    def as_dict(self) -> dict[str, object]:
        return {"code": self.code, "severity": self.severity, "file": self.file, "line": self.line,
                "message": self.message, "fix": self.fix}


def make_finding(code: str, file: str, line: int, detail: str = "", severity: Severity | None = None,
                 title: str | None = None, end_line: int = 0) -> Finding:
    """A finding of ``code``: the catalog gives severity, message and fix; ``detail`` names the culprit."""
    rule = CATALOG[code]
    title = title or rule.title
    message = f"{title} ({detail})" if detail else title
    return Finding(file=file, line=line, code=code, severity=severity or rule.severity, message=message, fix=rule.fix,
                   end_line=max(line, end_line))


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(f.severity == "error" for f in findings)


def exit_code(findings: Sequence[Finding], strict: bool = False) -> int:
    """0 when clean, 1 with errors (or with warnings under ``strict``), else 0."""
    if has_errors(findings) or (strict and findings):
        return 1
    return 0


def format_findings(findings: Sequence[Finding]) -> str:
    """One block per finding (``file:line: CODE severity: message`` and an indented fix), then a summary."""
    lines: list[str] = []
    for f in findings:
        lines.append(f"{f.file}:{f.line}: {f.code} {f.severity}: {f.message}")
        lines.append(f"    fix: {f.fix}  (silence: # orch: ignore[{f.code}])")
    lines.append(summary(findings))
    return "\n".join(lines)


def summary(findings: Sequence[Finding]) -> str:
    if not findings:
        return "orch doctor: no findings"
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = len(findings) - errors
    files = len({f.file for f in findings})
    return (f"orch doctor: {errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)} "
            f"in {files} file{'s' * (files != 1)}")
