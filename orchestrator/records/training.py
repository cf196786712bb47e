"""What a run wrote about its training in its job folder: ``metrics.jsonl`` (one record per epoch),
``progress.json`` (where it is inside an epoch) and ``result.json`` (the final metrics), read
tolerantly (a torn line, a missing or damaged file is no error), and their table cells."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

from orchestrator.spec.numbers import to_float, to_int
from orchestrator.spec.runconfig import METRICS_FILE, PROGRESS_FILE, RESULT_FILE
from orchestrator.spec.safefile import RECORD_LIMIT, read_json, read_text

log = logging.getLogger(__name__)


def read_metrics(job_dir: Path) -> list[dict[str, Any]]:
    """The per-epoch records in ``metrics.jsonl``; a line torn by a crash or preemption is skipped."""
    return read_json_lines(job_dir / METRICS_FILE)


def read_json_lines(path: Path, limit: int = RECORD_LIMIT) -> list[dict[str, Any]]:
    """The JSON objects of a ``.jsonl`` record file of at most ``limit`` bytes, in order.

    Damaged lines (torn by a crash, not JSON, not an object) are skipped and counted, with one
    warning for the whole file: a file of a million garbage lines costs one cheap test per line
    (a line that does not start with ``{`` is never parsed) and one line on stderr, not a million.
    """
    text = read_text(path, limit)  # bounded bytes; a regular file only (a FIFO never blocks)
    if text is None:
        return []
    records: list[dict[str, Any]] = []
    skipped = 0
    first = 0
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        record = _object(line) if line[0] == "{" else None
        if record is None:
            skipped += 1
            first = first or number
            continue
        records.append(record)
    if skipped:
        log.warning("%s: %d damaged line(s) skipped (not a JSON object; the first is line %d)",
                    path, skipped, first)
    return records


def _object(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def read_progress(job_dir: Path) -> dict[str, Any] | None:
    """Where the run is inside an epoch (``progress.json``: epoch, epochs, step, steps, loss, ...)."""
    return _read_object(job_dir / PROGRESS_FILE)


def progress_cells(record: dict[str, Any] | None) -> dict[str, str | None]:
    """``epoch``, ``step`` and ``loss`` as table cells ("2/10", "120/469", "0.3412") from a progress record."""
    if not record:
        return {"epoch": None, "step": None, "loss": None, "rate": None, "eta": None}

    def fraction(key: str, total: str) -> str | None:
        value, of = to_int(record.get(key)), to_int(record.get(total))
        return f"{value}/{of if of is not None else '?'}" if value is not None else None

    loss, rate = to_float(record.get("loss")), to_float(record.get("samples_per_s"))
    return {"epoch": fraction("epoch", "epochs"), "step": fraction("step", "steps"),
            "loss": f"{loss:.4f}" if loss is not None else None,
            "rate": f"{rate:,.0f}" if rate is not None else None, "eta": eta_cell(record)}


MAX_ETA_S = 100 * 365 * 86400  # an ETA past a century is shown as no ETA (huge or hostile numbers)


def eta_cell(record: dict[str, Any]) -> str | None:
    """The time the run still needs: the rest of this epoch (progress.json's ``eta_s``) and, at the
    epoch's pace, the epochs after it (``H:MM:SS``); None when the numbers are not there or absurd."""
    eta = to_float(record.get("eta_s"))
    counts = [to_int(record.get(k)) for k in ("step", "steps", "epoch", "epochs")]
    if eta is None or eta < 0 or any(v is None for v in counts):
        return None
    step, steps, epoch, epochs = (int(v) for v in counts if v is not None)
    left = eta
    if 0 < step < steps and epochs > epoch:  # the epochs still to come, at this epoch's pace
        left += eta / (steps - step) * steps * (epochs - epoch)
    if not math.isfinite(left) or left > MAX_ETA_S:
        return None
    whole = max(0, round(left))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def metrics_cell(record: dict[str, Any] | None) -> str | None:
    """The task's metrics of one metrics.jsonl record, by name: the test value when there is one
    (``test_acc 0.9912 test_mae 0.1275``), else the training value."""
    if not record:
        return None
    names = record.get("metrics")
    if not isinstance(names, list):  # a record written before the list existed
        names = ["acc"] if "train_acc" in record else []
    parts = []
    for name in ["loss", *[n for n in names if isinstance(n, str)]]:
        for key in (f"test_{name}", f"train_{name}"):
            value = to_float(record.get(key))
            if value is not None:
                parts.append(f"{key} {value:.4g}")
                break
    return " ".join(parts) or None


def read_result(job_dir: Path) -> dict[str, Any] | None:
    """The final metrics in ``result.json``, or None when the run has not finished."""
    return _read_object(job_dir / RESULT_FILE)


def _read_object(path: Path) -> dict[str, Any] | None:
    """A JSON object file; None when it is missing, not a regular file, not JSON or not an object (warned)."""
    return read_json(path, dict)
