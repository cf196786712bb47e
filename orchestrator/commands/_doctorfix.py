"""``orch doctor FILE --fix [--write]``: the diff that fixes the mechanical pitfalls (``orchestrator.doctor.fix``),
printed (nothing written), or with ``--write`` applied in place with the original kept beside it.

libcst is imported here only when a fix is asked for: never on the CLI's start-up path."""

from __future__ import annotations

import sys
from collections.abc import Collection, Sequence
from pathlib import Path

from orchestrator.doctor import DoctorInputError
from orchestrator.doctor.check import read_script
from orchestrator.doctor.findings import DoctorSkipped


def run_fix(paths: Sequence[str], ignore: Collection[str], write: bool, show_all: bool = False) -> int:
    """Print each file's diff on stdout (``patch -p0 < fix.diff`` applies it) and what was fixed or left on
    stderr; with ``write``, apply it. The findings fixed are those the doctor shows (``show_all``: the possible
    ones too). 0, or 2 when a file could not be read or written."""
    from orchestrator.doctor.fix import ScriptChanged, fix_source, unified_diff, write_fixed  # libcst: only here

    code = 0
    for path in paths:
        try:
            text = read_script(path)
            fixed = fix_source(text, path, ignore, show_all=show_all)
        except DoctorSkipped as exc:
            print(exc.warning(), file=sys.stderr)
            continue
        except DoctorInputError as exc:
            print(exc.render(), file=sys.stderr)
            code = 2
            continue
        for finding, why in fixed.left:
            print(f"orch doctor --fix: {path}:{finding.line}: {finding.code} not fixed: {why}", file=sys.stderr)
        if fixed.possible:
            print(f"orch doctor --fix: {path}: {fixed.possible} possible finding(s) not fixed (--all shows them; "
                  "--fix --all fixes them too)", file=sys.stderr)
        if not fixed.fixed:
            print(f"orch doctor --fix: {path}: nothing to fix", file=sys.stderr)
            continue
        sys.stdout.write(unified_diff(text, fixed.text, path))
        done = ", ".join(f"{f.code} (line {f.line})" for f in fixed.fixed)
        if not write:
            print(f"orch doctor --fix: {path}: fixes {done}; apply them with --fix --write (or patch -p0)",
                  file=sys.stderr)
            continue
        try:
            backup = write_fixed(Path(path), text, fixed.text)
        except ScriptChanged as exc:
            print(exc.render(), file=sys.stderr)
            code = 2
            continue
        print(f"orch doctor --fix: {path}: fixed {done}; the original is in {backup}", file=sys.stderr)
    sys.stdout.flush()
    return code
