"""What the doctor reports: findings, their text and JSON forms, and the exit code they mean."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.doctor.catalog import CATALOG, Severity
from orchestrator.doctor.confidence import Confidence, default_confidence, shown
from orchestrator.errors import OrchError


class DoctorInputError(OrchError):
    """A file the doctor cannot read or parse (exit 2, with the place of a syntax error)."""


class DoctorSkipped(DoctorInputError):
    """A file the doctor cannot take in (nested or long beyond what the parser can hold, not a regular
    file, too large): skipped with a warning, never a traceback or a hang."""

    def warning(self) -> str:
        return f"orch doctor: warning: {self.message}; not checked"


@dataclass(frozen=True)
class ArgsConfig:
    """Where the command line gives a framework layout's node count (DDP023; ``argsconfig.node_count`` reads it):
    the ``options`` that name the config file (``--config``, ``-c``; ``argv[1]``: the first argument), the ``keys``
    to the count in it (``trainer``, ``num_nodes``; also an override ``trainer.num_nodes=2``), the count where the
    file's section leaves it out (``missing``: Lightning's 1) and where no file is named (``unnamed``: the default
    file's, Lightning's 1; None: not known); ``merged``: several files merge in order, and one without the count
    keeps the one before (a LightningCLI's ``--config``s)."""

    options: tuple[str, ...]
    keys: tuple[str, ...]
    missing: int | None = None
    unnamed: int | None = None
    merged: bool = False
    hydra: tuple[Path, str] | None = None  # a Hydra app's config folder and name: its command line composes the config
    # the count matters only where the section composed with the arguments runs several processes (a Hydra group's
    # parallel option, ``trainer=ddp``, over a default that runs one)
    parallel: bool = False


@dataclass(frozen=True, order=True)
class Finding:
    file: str
    line: int
    code: str
    severity: Severity
    message: str
    fix: str
    end_line: int = field(default=0, compare=False, repr=False)  # last line of the statement (suppression)
    # first line of the statement where ``line`` names one of its later lines (a call's ``rank=`` argument)
    start_line: int = field(default=0, compare=False, repr=False)
    confidence: Confidence = field(default="likely", compare=False)  # how direct the evidence is (confidence.py)
    evidence: str = field(default="", compare=False)  # the line(s) and the fact that triggered it
    # what later readings decide on, said by the rule that knew it (never read back from the message): marks such
    # as feasibility.ACROSS_MARK, and the node count a framework layout is certainly fixed at (DDP023)
    marks: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    nodes: int | None = field(default=None, compare=False, repr=False)
    # where the script's arguments give that node count instead (a config file they name, an override)
    args_config: ArgsConfig | None = field(default=None, compare=False, repr=False)

    def as_dict(self) -> dict[str, object]:
        return {"code": self.code, "severity": self.severity, "confidence": self.confidence, "file": self.file,
                "line": self.line, "message": self.message, "fix": self.fix, "evidence": self.evidence}


def make_finding(code: str, file: str, line: int, detail: str = "", severity: Severity | None = None,
                 title: str | None = None, end_line: int = 0, confidence: Confidence | None = None,
                 evidence: str = "", marks: frozenset[str] = frozenset(), nodes: int | None = None,
                 start_line: int = 0, args_config: ArgsConfig | None = None) -> Finding:
    """A finding of ``code``: the catalog gives severity, message and fix; ``detail`` names the culprit; ``line`` is
    the line to change, ``start_line``..``end_line`` the statement (a suppression anywhere in it counts);
    ``confidence`` defaults to the code's (:func:`default_confidence`: every error is certain)."""
    rule = CATALOG[code]
    title = title or rule.title
    message = f"{title} ({detail})" if detail else title
    severity = severity or rule.severity
    return Finding(file=file, line=line, code=code, severity=severity, message=message, fix=rule.fix,
                   end_line=max(line, end_line), confidence=confidence or default_confidence(code, severity),
                   evidence=evidence or detail, marks=marks, nodes=nodes, start_line=min(line, start_line or line),
                   args_config=args_config)


def refuses(finding: Finding) -> bool:
    """Whether ``finding`` stops a launch (and makes ``orch doctor`` exit 1): an error not merely possible."""
    return finding.severity == "error" and finding.confidence != "possible"


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(refuses(f) for f in findings)


def exit_code(findings: Sequence[Finding], strict: bool = False, show_all: bool = False) -> int:
    """0 when clean, 1 with errors (or with warnings shown under ``strict``: possible ones only with ``show_all``),
    else 0."""
    if has_errors(findings) or (strict and any(shown(f.confidence, show_all) for f in findings)):
        return 1
    return 0


def format_findings(findings: Sequence[Finding], show_all: bool = False) -> str:
    """One block per finding (``file:line: CODE severity: message``, its evidence and confidence, an indented
    fix), then a summary. The possible findings are left out unless ``show_all`` (``--all``); a line says how
    many, and how to see them."""
    kept = [f for f in findings if shown(f.confidence, show_all)]
    lines: list[str] = []
    for f in kept:
        lines.append(f"{f.file}:{f.line}: {f.code} {f.severity}: {f.message}")
        if f.evidence:
            lines.append(f"    evidence ({f.confidence}): {f.evidence}")
        lines.append(f"    fix: {f.fix}  (silence: # orch: ignore[{f.code}])")
    lines.append(summary(kept))
    hidden = len(findings) - len(kept)
    if hidden:
        lines.append(f"orch doctor: {hidden} possible finding{'s' * (hidden != 1)} not shown (the evidence is a "
                     "name's meaning or something not seen); orch doctor --all shows them")
    return "\n".join(lines)


def summary(findings: Sequence[Finding]) -> str:
    if not findings:
        return "orch doctor: no findings"
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = len(findings) - errors
    files = len({f.file for f in findings})
    return (f"orch doctor: {errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)} "
            f"in {files} file{'s' * (files != 1)}")
