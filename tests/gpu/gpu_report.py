"""The GPU checks' report: one row per check (result, figure, seconds), written while pytest runs, printed after.

tests/gpu/conftest.py appends one JSON line per ``gpu`` test to the file ``$ORCH_GPU_REPORT`` names (nothing
when unset): ``{"check", "result", "figure", "seconds", "note"}``, result ``ok``, ``FAIL`` or ``skipped``; a
test gives its figure with the ``gpu_figure`` fixture. ``scripts/gpu-check.sh`` then prints the table:

    python tests/gpu/gpu_report.py REPORT.jsonl

as a Markdown table (to paste into docs/benchmarks.md), the skip and failure reasons under it, and exits 1
when a check failed or no check ran at all. Pure (no torch, no pytest): tests/gpu/test_gpu_report.py.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

REPORT_ENV = "ORCH_GPU_REPORT"
FIGURE_KEY = "gpu_figure"  # the user_properties key the gpu_figure fixture appends under
OK, FAIL, SKIPPED = "ok", "FAIL", "skipped"
NOTE_CHARS = 300


def check_name(nodeid: str) -> str:
    """``tests/gpu/test_gpu_amp.py::test_amp_script[bf16]`` -> ``amp_script[bf16]``."""
    name = nodeid.rsplit("::", 1)[-1]
    return name[len("test_"):] if name.startswith("test_") else name


def new_row(nodeid: str) -> dict[str, Any]:
    return {"check": check_name(nodeid), "result": OK, "figure": "", "seconds": 0.0, "note": ""}


def _short(text: str) -> str:
    """The line that says why: pytest's ``E   ...`` line when there is one, else the last non-blank line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line[1:].strip() for line in lines if line.startswith("E ")]
    picked = errors[0] if errors else (lines[-1] if lines else "")
    return picked[:NOTE_CHARS]


def skip_reason(longrepr: Any) -> str:
    """pytest keeps a skip as ``(path, line, "Skipped: reason")``."""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        text = str(longrepr[2])
        return text[len("Skipped: "):] if text.startswith("Skipped: ") else text
    return str(longrepr or "")


def add_phase(row: dict[str, Any], *, when: str, outcome: str, duration: float, message: str = "",
              figures: Sequence[str] = ()) -> dict[str, Any]:
    """Fold one phase (setup, call, teardown) of a test into its row: a failure anywhere fails the check, a
    skip marks it skipped (with the reason) unless it already failed; seconds add up."""
    row = dict(row)
    row["seconds"] = round(row["seconds"] + duration, 2)
    if figures:
        row["figure"] = "; ".join(figures)
    if outcome == "failed":
        if row["result"] != FAIL:
            row["note"] = f"{when}: {_short(message)}" if when != "call" else _short(message)
        row["result"] = FAIL
    elif outcome == "skipped" and row["result"] != FAIL:
        row["result"] = SKIPPED
        row["note"] = message[:NOTE_CHARS]
    return row


def append_row(path: Path, row: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(row, sort_keys=True) + "\n")


def read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _cell(text: Any) -> str:
    return str(text).replace("|", "/").replace("\n", " ")


# The table's order (by the start of the check's name; others after them, as they ran).
ORDER = ("selftest", "mnist", "script_cuda_contexts", "amp", "gpus_per_task", "framework")


def _rank(row: dict[str, Any]) -> int:
    return next((i for i, prefix in enumerate(ORDER) if row["check"].startswith(prefix)), len(ORDER))


def format_table(rows: Iterable[dict[str, Any]]) -> str:
    """A Markdown table: check | result | figure | seconds, then the notes (skip and failure reasons)."""
    rows = sorted(rows, key=_rank)
    lines = ["| check | result | figure | seconds |", "| --- | --- | --- | ---: |"]
    for row in rows:
        lines.append(f"| {_cell(row['check'])} | {_cell(row['result'])} | {_cell(row['figure'] or '-')} "
                     f"| {float(row['seconds']):.1f} |")
    notes = [f"- {row['check']} ({row['result']}): {row['note']}" for row in rows if row.get("note")]
    if notes:
        lines += ["", *notes]
    counts = {kind: sum(1 for row in rows if row["result"] == kind) for kind in (OK, FAIL, SKIPPED)}
    lines += ["", f"{counts[OK]} ok, {counts[FAIL]} failed, {counts[SKIPPED]} skipped"]
    return "\n".join(lines)


def exit_status(rows: Sequence[dict[str, Any]]) -> int:
    """1 when a check failed or none ran (a missing report is no pass), else 0."""
    if not rows or any(row["result"] == FAIL for row in rows):
        return 1
    return 0


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python tests/gpu/gpu_report.py REPORT.jsonl", file=sys.stderr)
        return 2
    rows = read_rows(Path(argv[0]))
    if not rows:
        print(f"no GPU check reported anything ({argv[0]} is empty or missing): see pytest's output above")
        return 1
    print(format_table(rows))
    return exit_status(rows)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
