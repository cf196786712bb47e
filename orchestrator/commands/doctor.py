"""``orch doctor FILE... [--json] [--strict] [--nproc N | --nodes N [--gpus G]]``: the DDP pitfalls of a script,
found statically, and what ``orch run``/``orch submit`` would refuse for the layout asked."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from orchestrator import launchstyles
from orchestrator.commands._common import (
    add_cluster_argument,
    add_ignore_argument,
    add_json_argument,
    print_json,
    scope,
)
from orchestrator.doctor import DoctorInputError, Finding, check_file, exit_code, format_findings
from orchestrator.doctor.check import dedupe
from orchestrator.doctor.feasibility import across_nodes
from orchestrator.doctor.findings import DoctorSkipped
from orchestrator.doctor.frameworks import read_frameworks
from orchestrator.doctor.launchstyle import ANSWERS, answered
from orchestrator.doctor.layouts import Asked, layout_lines
from orchestrator.service.jobs import cluster_or_none
from orchestrator.spec.doctorcodes import parse_codes
from orchestrator.spec.launch import Launch


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="Python scripts to check (a directory: its *.py "
                                                                 "files, recursively)")
    parser.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    parser.add_argument("--all", action="store_true", dest="show_all", help="show the possible findings too (the "
                        "evidence is a name's meaning or something not seen); by default certain and likely only")
    parser.add_argument("--fix", action="store_true", help="print a unified diff that fixes the mechanical pitfalls "
                        "(DDP001, DDP004, DDP006, DDP007, DDP009, DDP015); nothing is written")
    parser.add_argument("--write", action="store_true", help="with --fix: apply the diff in place (the original "
                                                              "kept as FILE.orig)")
    layout = parser.add_argument_group("the layout to judge the script for (one judge: what orch run and orch "
                                       "submit would refuse is an error here too)")
    layout.add_argument("--nodes", type=int, metavar="N", help="as orch submit --nodes N: what cannot work across "
                        "nodes (DDP010, DDP021, DDP022) is an error on more than one, and a Trainer/Fabric layout is "
                        "checked against N nodes")
    layout.add_argument("--gpus", type=int, metavar="G", help="as orch submit --gpus G (GPUs per node)")
    layout.add_argument("--nproc", type=int, metavar="N", help="as orch run --nproc N (one node, N ranks)")
    add_ignore_argument(parser)
    add_cluster_argument(parser)
    add_json_argument(parser)


def check_files(args: argparse.Namespace, layout_errors: list[str] | None = None) -> tuple[
        list[Finding], list[str], list[DoctorInputError], list[str]]:
    """The findings of ``args.files`` (less ``--ignore`` and cluster.yaml's doctor.ignore), the warnings of
    files that could not be parsed, the files that could not be read, and a note per script written for
    another launch style (what orch run/submit make of it: :func:`launch_note`) or with a Trainer/Fabric layout
    (what to run it with); ``layout_errors`` gets what orch run/submit would refuse for ``--nproc`` or
    ``--nodes/--gpus`` (``orchestrator.doctor.layouts``)."""
    layout_errors = [] if layout_errors is None else layout_errors
    ignore = _ignored(args)
    findings: list[Finding] = []
    skipped: list[str] = []
    unreadable: list[DoctorInputError] = []
    notes: list[str] = []
    for path in _expand(args.files):
        try:
            found = check_file(path)
        except DoctorSkipped as exc:  # cannot be parsed (too deep, too large, not a file): a warning
            skipped.append(exc.warning())
            continue
        except DoctorInputError as exc:
            unreadable.append(exc)
            continue
        launch = launchstyles.detect(launchstyles.read(Path(path)))
        if launch.how == "detected":  # orch run and orch submit start it in its style: say what they would
            found = answered(launch, found)
            notes.append(launch_note(path, launch))
        asked = _asked(args)
        if asked.given:  # the layout asked for: what certainly fails across nodes is an error, as at submit
            found = across_nodes(found, 1 if asked.nproc is not None else asked.nodes or 1, asked.gpus)
        for line in layout_lines(path, read_frameworks(Path(path)), launch.style, asked):
            (layout_errors if line.error else notes).append(line.text)
        findings.extend(f for f in found if f.code not in ignore)
    return dedupe(findings), skipped, unreadable, notes


def _asked(args: argparse.Namespace) -> Asked:
    """``--nproc`` or ``--nodes/--gpus`` (not both: they judge for different verbs)."""
    nproc, nodes, gpus = (getattr(args, name, None) for name in ("nproc", "nodes", "gpus"))
    if nproc is not None and (nodes is not None or gpus is not None):
        raise DoctorInputError("--nproc judges the script as orch run does, --nodes/--gpus as orch submit does",
                               hint="pass one of them: --nproc N, or --nodes N [--gpus G]")
    for name, value in (("--nproc", nproc), ("--nodes", nodes), ("--gpus", gpus)):
        if value is not None and value < (0 if name == "--gpus" else 1):
            raise DoctorInputError(f"{name} {value}: not a count", hint=f"pass {name} as a whole number of at "
                                                                         f"least {0 if name == '--gpus' else 1}")
    return Asked(nproc=nproc, nodes=nodes, gpus=gpus)


def _ignored(args: argparse.Namespace) -> tuple[str, ...]:
    """``--ignore`` and cluster.yaml's doctor.ignore (which applies here as in orch submit / orch run)."""
    cluster = cluster_or_none(scope(args))
    return parse_codes([*args.ignore, *(cluster.doctor.ignore if cluster is not None else ())], "--ignore")


def launch_note(path: str, launch: Launch) -> str:
    """One line: the style a script is written for, and what orch run/submit make of it (one judge: what this
    verb reports is what they report)."""
    answer = ANSWERS.get(launch.style)
    dropped = f"; {answer}, the rewrite it would need under torchrun, is not reported" if answer else ""
    return (f"orch doctor: {path}: written for the {launch.style} launch style ({launch.why}): orch run and orch "
            f"submit start it that way, as written{dropped} (docs/bring-your-own-script.md#launch-styles-scripts-"
            "written-for-another-launcher)")


def run(args: argparse.Namespace) -> int:
    if args.fix or args.write:
        return _fix(args)
    layout_errors: list[str] = []
    findings, skipped, unreadable, notes = check_files(args, layout_errors)
    for line in [*skipped, *notes, *layout_errors]:
        print(line, file=sys.stderr, flush=True)
    if args.json:
        print_json([f.as_dict() for f in findings])
    elif layout_errors and not findings:
        print("orch doctor: no findings in the code; the layout asked for would be refused (above)")
    else:
        print(format_findings(findings, show_all=args.show_all))
    for error in unreadable:
        print(error.render(), file=sys.stderr)
    if unreadable:
        return 2
    return max(exit_code(findings, strict=args.strict, show_all=args.show_all), 1 if layout_errors else 0)


def _fix(args: argparse.Namespace) -> int:
    if not args.fix or args.json:
        raise DoctorInputError("--write applies --fix's diff" if not args.fix else "--fix prints a diff, not JSON",
                               hint="orch doctor FILE --fix (prints the diff) or --fix --write (applies it)")
    from orchestrator.commands._doctorfix import run_fix  # imports libcst: only when a fix is asked for

    return run_fix(_expand(args.files), _ignored(args), write=args.write, show_all=args.show_all)


def _expand(paths: list[str]) -> list[str]:
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
