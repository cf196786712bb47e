"""``orch doctor FILE... [--json] [--strict] [--nproc N | --nodes N [--gpus G]]``: the DDP pitfalls of a script,
found statically, and what ``orch run``/``orch submit`` would refuse for the layout asked."""

from __future__ import annotations

import argparse
import sys

from orchestrator.commands._common import (
    add_cluster_argument,
    add_ignore_argument,
    add_json_argument,
    print_json,
    scope,
)
from orchestrator.doctor import DoctorInputError, exit_code, format_findings
from orchestrator.service.doctor import asked, diagnose, expand, ignored


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


def run(args: argparse.Namespace) -> int:
    if args.fix or args.write:
        return _fix(args)
    checked = diagnose(args.files, ignored(args.ignore, scope(args)), asked(args.nproc, args.nodes, args.gpus))
    findings, unreadable, layout_errors = checked.findings, checked.unreadable, checked.layout_errors
    for line in [*checked.skipped, *checked.notes, *layout_errors]:
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

    return run_fix(expand(args.files), ignored(args.ignore, scope(args)), write=args.write,
                   show_all=args.show_all)
