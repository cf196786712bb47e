"""orch doctor's corpus: the fixtures, the findings each must raise, and precision/recall over them.

Each fixture marks the findings it must raise on their lines: ``# expect: DDP002`` (several: ``# expect:
DDP005, DDP006``). ``# missed: DDP003`` marks a real instance of a pitfall the doctor does not find (it
counts against recall). A fixture without markers (the corrected twins, the traps) must stay clean.

Run ``python tests/doctor/doctor_corpus.py`` for the table and the figures.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
_MARK = re.compile(r"#\s*(expect|missed):\s*(DDP\d{3}(?:\s*,\s*DDP\d{3})*)")

Pair = tuple[str, int]  # (code, line)


@dataclass
class Expected:
    found: set[Pair] = field(default_factory=set)   # must be reported
    missed: set[Pair] = field(default_factory=set)  # real, known not to be reported


def fixtures() -> list[Path]:
    return sorted(FIXTURES.glob("*.py"))


def expected(path: Path) -> Expected:
    result = Expected()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        for kind, codes in _MARK.findall(line):
            pairs = {(code.strip(), number) for code in codes.split(",")}
            (result.found if kind == "expect" else result.missed).update(pairs)
    return result


def actual(path: Path) -> set[Pair]:
    from orchestrator.doctor import check_file

    return {(f.code, f.line) for f in check_file(path)}


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def score(paths: list[Path]) -> tuple[Score, list[tuple[str, Score]]]:
    total, rows = Score(), []
    for path in paths:
        want, got = expected(path), actual(path)
        truth = want.found | want.missed
        row = Score(tp=len(got & truth), fp=len(got - truth), fn=len(truth - got))
        rows.append((path.name, row))
        total.tp, total.fp, total.fn = total.tp + row.tp, total.fp + row.fp, total.fn + row.fn
    return total, rows


def main() -> int:
    total, rows = score(fixtures())
    width = max(len(name) for name, _ in rows)
    print(f"{'fixture':<{width}}  {'TP':>3} {'FP':>3} {'FN':>3}")
    for name, row in rows:
        print(f"{name:<{width}}  {row.tp:>3} {row.fp:>3} {row.fn:>3}")
    print(f"{'total':<{width}}  {total.tp:>3} {total.fp:>3} {total.fn:>3}")
    print(f"fixtures {len(rows)}, precision {total.precision:.3f}, recall {total.recall:.3f}")
    groups = {
        "seed scripts": [p for p in fixtures() if p.name.startswith("seed") and not p.stem.endswith("_fixed")],
        "corrected twins": [p for p in fixtures() if p.stem.endswith("_fixed")],
        "own cases": [p for p in fixtures() if p.name.startswith("case_")],
    }
    for label, paths in groups.items():
        part, _ = score(paths)
        print(f"{label} ({len(paths)} files): TP {part.tp}, FP {part.fp}, FN {part.fn}, "
              f"precision {part.precision:.3f}, recall {part.recall:.3f}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    sys.exit(main())
