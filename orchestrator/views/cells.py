"""``orch top``'s cells: one table of columns (title -> how a :class:`~orchestrator.service.board.JobRow` shows
there), a progress bar and a sparkline. Plain text, no terminal library: the app and the tests share it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from orchestrator.service.board import JobRow

SPARKS = "▁▂▃▄▅▆▇█"
BAR_WIDTH = 10
TREND_WIDTH = 12


def sparkline(values: Sequence[float], width: int = TREND_WIDTH) -> str:
    """The last ``width`` values as block characters, lowest to highest (flat: the middle block)."""
    shown = [v for v in values if math.isfinite(v)][-width:]
    if not shown:
        return ""
    low, high = min(shown), max(shown)
    if high - low <= 1e-12 * max(1.0, abs(high)):
        return SPARKS[len(SPARKS) // 2] * len(shown)
    top = len(SPARKS) - 1
    return "".join(SPARKS[round((v - low) / (high - low) * top)] for v in shown)


def bar(done: float | None, width: int = BAR_WIDTH) -> str:
    """``████░░░░░░  40%``; empty when the share is unknown."""
    if done is None or not math.isfinite(done):
        return ""
    share = max(0.0, min(1.0, done))
    filled = round(share * width)
    return "█" * filled + "░" * (width - filled) + f" {share:4.0%}"


def _progress(row: JobRow) -> str:
    where = " ".join(p for p in (f"ep {row.epoch}" if row.epoch else "", f"step {row.step}" if row.step else "") if p)
    return " ".join(p for p in (bar(row.done), where) if p)


def _loss(row: JobRow) -> str:
    return f"{row.loss:.4g}" if row.loss is not None and math.isfinite(row.loss) else ""


def _goodput(row: JobRow) -> str:
    return f"{row.goodput:.0%}" if row.goodput is not None and math.isfinite(row.goodput) else ""


# title -> the cell of a row; the order of the table's columns
COLUMNS: dict[str, Callable[[JobRow], str]] = {
    "NAME": lambda r: r.name,
    "JOBID": lambda r: r.job_id or ("local" if r.mode == "local" else ""),
    "STATE": lambda r: r.state,
    "NODES": lambda r: r.nodes or "",
    "PROGRESS": _progress,
    "ETA": lambda r: r.eta or "",
    "LOSS": _loss,
    "TREND": lambda r: sparkline(r.trend),
    "SAMPLES/S": lambda r: r.rate or "",
    "RESTARTS": lambda r: r.restarts or "",
    "GOODPUT": _goodput,
    "BLAMED": lambda r: r.blamed or "",
}


def cells(row: JobRow) -> list[str]:
    """The row's cells in :data:`COLUMNS` order."""
    return [show(row) for show in COLUMNS.values()]
