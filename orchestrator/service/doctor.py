"""``orch doctor``'s reading (the verb and ``orch mcp``'s doctor tool): the DDP pitfalls of scripts, found statically,
less the codes ignored, the launch style each is written for, and what ``orch run``/``orch submit`` would refuse
for the layout asked (one judge)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator import launchstyles
from orchestrator.doctor import DoctorInputError, Finding, check_file
from orchestrator.doctor.check import dedupe
from orchestrator.doctor.feasibility import across_nodes
from orchestrator.doctor.findings import DoctorSkipped
from orchestrator.doctor.frameworks import read_frameworks
from orchestrator.doctor.launchstyle import ANSWERS, answered
from orchestrator.doctor.layouts import Asked, layout_lines
from orchestrator.doctor.rules_layout import without_judged_layouts
from orchestrator.service.jobs import Scope, cluster_or_none
from orchestrator.spec.doctorcodes import parse_codes
from orchestrator.spec.launch import Launch


@dataclass(frozen=True)
class Checked:
    """What ``orch doctor`` found: the findings (less the codes ignored), the warnings of files that could not be
    parsed, the files that could not be read, a note per script written for another launch style or with a
    Trainer/Fabric layout, and what orch run/submit would refuse for the layout asked."""

    findings: list[Finding]
    skipped: list[str] = field(default_factory=list)
    unreadable: list[DoctorInputError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    layout_errors: list[str] = field(default_factory=list)


def ignored(given: Sequence[str], scope: Scope) -> tuple[str, ...]:
    """``--ignore`` and cluster.yaml's doctor.ignore (which applies here as in orch submit / orch run)."""
    cluster = cluster_or_none(scope)
    return parse_codes([*given, *(cluster.doctor.ignore if cluster is not None else ())], "--ignore")


def asked(nproc: int | None = None, nodes: int | None = None, gpus: int | None = None) -> Asked:
    """``--nproc`` or ``--nodes/--gpus`` (not both: they judge for different verbs)."""
    if nproc is not None and (nodes is not None or gpus is not None):
        raise DoctorInputError("--nproc judges the script as orch run does, --nodes/--gpus as orch submit does",
                               hint="pass one of them: --nproc N, or --nodes N [--gpus G]")
    for name, value in (("--nproc", nproc), ("--nodes", nodes), ("--gpus", gpus)):
        if value is not None and value < (0 if name == "--gpus" else 1):
            raise DoctorInputError(f"{name} {value}: not a count", hint=f"pass {name} as a whole number of at "
                                                                         f"least {0 if name == '--gpus' else 1}")
    return Asked(nproc=nproc, nodes=nodes, gpus=gpus)


def diagnose(files: Sequence[str], ignore: Sequence[str], layout: Asked) -> Checked:
    """The doctor over ``files`` (a directory: its ``*.py`` files, recursively), judged for ``layout``."""
    out = Checked(findings=[])
    for path in expand(files):
        try:
            found = check_file(path)
        except DoctorSkipped as exc:  # cannot be parsed (too deep, too large, not a file): a warning
            out.skipped.append(exc.warning())
            continue
        except DoctorInputError as exc:
            out.unreadable.append(exc)
            continue
        launch = launchstyles.detect(launchstyles.read(Path(path)))
        nodes = 1 if layout.nproc is not None else layout.nodes or 1
        if launch.how == "detected" or nodes > 1:  # as orch run and orch submit judge it (across nodes: any style)
            found = answered(launch, found, nodes, Path(path))
        if launch.how == "detected":  # orch run and orch submit start it in its style: say what they would
            out.notes.append(launch_note(path, launch))
        if layout.given:  # the layout asked for: what certainly fails across nodes is an error, as at submit
            found = without_judged_layouts(found, read_frameworks(Path(path)))  # layout_lines judge those
            found = across_nodes(found, 1 if layout.nproc is not None else layout.nodes or 1, layout.gpus)
        for line in layout_lines(path, read_frameworks(Path(path)), launch.style, layout):
            (out.layout_errors if line.error else out.notes).append(line.text)
        out.findings.extend(f for f in found if f.code not in ignore)
    return Checked(dedupe(out.findings), out.skipped, out.unreadable, out.notes, out.layout_errors)


def launch_note(path: str, launch: Launch) -> str:
    """One line: the style a script is written for, and what orch run/submit make of it (one judge: what this
    verb reports is what they report)."""
    answer = ANSWERS.get(launch.style)
    dropped = f"; {answer}, the rewrite it would need under torchrun, is not reported" if answer else ""
    return (f"orch doctor: {path}: written for the {launch.style} launch style ({launch.why}): orch run and orch "
            f"submit start it that way, as written{dropped} (docs/bring-your-own-script.md#launch-styles-scripts-"
            "written-for-another-launcher)")


def expand(paths: Sequence[str]) -> list[str]:
    """Files as given; a directory becomes its ``*.py`` files (not in hidden folders or caches)."""
    out: list[str] = []
    for text in paths:
        path = Path(text)
        if not path.is_dir():
            out.append(text)
            continue
        found = sorted(p for p in path.rglob("*.py") if not any(
            part.startswith(".") or part in _SKIP_DIRS for part in p.relative_to(path).parts[:-1]))
        if not found:
            raise DoctorInputError(f"{path}: no Python files in this directory", hint="pass .py files or a "
                                                                                        "folder that holds some")
        out.extend(str(p) for p in found)
    return out


_SKIP_DIRS = frozenset({"__pycache__", "site-packages", "node_modules", "venv"})
