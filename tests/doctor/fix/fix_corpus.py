"""``orch doctor --fix`` on the doctor's corpus of real scripts (tests/doctor/real/): for each script's entry file
with fixable findings, whether the diff applies (``patch``, to a copy) and whether the fixed script passes the
doctor for the codes fixed (no finding of those codes left in the entry).

Run ``python tests/doctor/fix/fix_corpus.py [--all]`` for one line per script and the totals (``--all``: as
``--fix --all``, the possible findings too)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # real_corpus, when run as a script
from real_corpus import REAL, reader, require_code, truth

from orchestrator.doctor.check import read_script
from orchestrator.doctor.confidence import shown
from orchestrator.doctor.fix import FIXERS, fix_source, unified_diff


@dataclass(frozen=True)
class Outcome:
    script: str
    fixable: tuple[str, ...]  # the codes of the entry's fixable findings
    fixed: tuple[str, ...]
    left: tuple[str, ...]
    applies: bool
    passes: bool  # no finding of a fixed code left in the fixed entry, but those the fixer left as they were


def fix_one(name: str, entry: str, show_all: bool = False) -> Outcome | None:
    """``show_all``: as ``--fix --all`` (the possible findings too); else as ``--fix``."""
    path = REAL / name / entry
    text = read_script(path)
    result = fix_source(text, str(path), show_all=show_all, reader=reader)  # the corpus tests' reading too
    fixable = tuple(sorted(f.code for f in result.before
                           if f.file == str(path) and f.code in FIXERS and shown(f.confidence, show_all)))
    if not fixable:
        return None
    fixed = tuple(sorted(f.code for f in result.fixed))
    applies = _applies(text, unified_diff(text, result.text, entry), result.text, entry) if fixed else True
    left = tuple(sorted(f.code for f, _ in result.left))
    after = [f.code for f in result.findings if f.file == str(path)]
    # passes: of each fixed code, no finding left but those the fixer said it left as they were (another finding of
    # the same code that has no fix of its form stays, and is not a failed fix)
    return Outcome(name, fixable, fixed, left, applies, all(after.count(code) <= left.count(code) for code in fixed))


def _applies(text: str, diff: str, fixed: str, entry: str) -> bool:
    """``patch`` applies the diff to a copy of the script, and the result is the fixed text."""
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / Path(entry).name
        copy.write_text(text, encoding="utf-8")
        (Path(folder) / "fix.diff").write_text(diff, encoding="utf-8")
        proc = subprocess.run(["patch", "-s", "-o", "out.py", copy.name, "fix.diff"], cwd=folder, capture_output=True,
                              check=False)
        return proc.returncode == 0 and (Path(folder) / "out.py").read_bytes() == fixed.encode("utf-8")


def fix_all(show_all: bool = False, names: Sequence[str] | None = None) -> list[Outcome]:
    """``names``: those scripts only (every script of the corpus by default)."""
    data = truth()
    found = (fix_one(name, data[name]["entry"], show_all) for name in (names or sorted(data)))
    return [outcome for outcome in found if outcome is not None]


def main() -> None:
    require_code()
    show_all = "--all" in sys.argv[1:]
    outcomes = fix_all(show_all)
    print(f"orch doctor --fix{' --all' * show_all} on {len(truth())} scripts")
    for o in outcomes:
        print(f"{o.script:28} fixable {','.join(o.fixable):30} fixed {','.join(o.fixed) or '-':30} "
              f"left {','.join(o.left) or '-':14} applies {o.applies} passes {o.passes}")
    fixable = sum(len(o.fixable) for o in outcomes)
    fixed = sum(len(o.fixed) for o in outcomes)
    with_fix = [o for o in outcomes if o.fixed]
    print(f"scripts with fixable findings: {len(outcomes)}; with a diff: {len(with_fix)}; diffs that apply: "
          f"{sum(o.applies for o in with_fix)}; fixed scripts that pass the doctor for the fixed codes: "
          f"{sum(o.passes for o in with_fix)}; findings fixed: {fixed} of {fixable}")


if __name__ == "__main__":
    main()
