"""Plain text tables of the follow-up verbs (status, list): columns, empty cells, optional columns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def format_rows(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, str]) -> str:
    """A plain text table: ``columns`` maps each title to a row key; empty cells show ``-``."""
    header = list(columns)
    body = [[_cell(row.get(key)) for key in columns.values()] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in body]
    return "\n".join(lines)


# columns a job may leave empty: hidden when every row is empty there (a script reports no epochs)
OPTIONAL_COLUMNS = ("GPU_H", "EPOCH", "STEP", "LOSS", "SAMPLES/S", "ETA", "METRICS")


def shown_columns(rows: list[dict[str, Any]], columns: dict[str, str],
                  optional: tuple[str, ...] = OPTIONAL_COLUMNS) -> dict[str, str]:
    """``columns`` without the optional ones that no row fills."""
    return {title: key for title, key in columns.items()
            if title not in optional or any(row.get(key) not in (None, "") for row in rows)}


def _cell(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)
