"""``orch doctor``: a static check of a user's DDP script for the pitfalls of the catalog (DDP001..DDP024).

It parses the file with ``ast``: it never imports torch and never runs the user's code. Use it before
submitting a script::

    from orchestrator.doctor import check_files, format_findings, has_errors
    findings = check_files(["train.py"])
    print(format_findings(findings))
    if has_errors(findings): ...

or, in a verb that launches a script: ``gate([script], sys.stderr, refuse=not (args.no_check or
args.dry_run))``, which prints the findings and raises ``ScriptRefused`` (exit 2) on errors.
"""

from __future__ import annotations

from orchestrator.doctor.catalog import CATALOG, Rule
from orchestrator.doctor.check import check_file, check_files, check_source
from orchestrator.doctor.findings import DoctorInputError, Finding, exit_code, format_findings, has_errors, summary
from orchestrator.doctor.gate import ScriptRefused, gate

__all__ = ["CATALOG", "DoctorInputError", "Finding", "Rule", "ScriptRefused", "check_file", "check_files",
           "check_source", "exit_code", "format_findings", "gate", "has_errors", "summary"]
