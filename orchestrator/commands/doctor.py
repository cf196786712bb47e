"""``orch doctor FILE... [--json] [--strict]``: the DDP pitfalls of a script, found statically."""

from __future__ import annotations

import argparse
import sys

from orchestrator.commands._common import add_json_argument, print_json
from orchestrator.doctor import DoctorInputError, Finding, check_file, exit_code, format_findings

HELP = "check training scripts for DDP pitfalls (DDP001..DDP010) without running them"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="Python scripts to check")
    parser.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    findings: list[Finding] = []
    unreadable: list[DoctorInputError] = []
    for path in args.files:
        try:
            findings.extend(check_file(path))
        except DoctorInputError as exc:
            unreadable.append(exc)
    if args.json:
        print_json([f.as_dict() for f in findings])
    else:
        print(format_findings(findings))
    for error in unreadable:
        print(error.render(), file=sys.stderr)
    return 2 if unreadable else exit_code(findings, strict=args.strict)
