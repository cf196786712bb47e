"""The GPU checks' report (see gpu_report.py): every ``gpu`` test's outcome, seconds and figure go to
``$ORCH_GPU_REPORT`` (one JSON line per test) when that variable is set; ``gpu_figure`` records a figure."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gpu_report import FIGURE_KEY, REPORT_ENV, add_phase, append_row, new_row, skip_reason

_rows: dict[str, dict[str, Any]] = {}


@pytest.fixture
def gpu_figure(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """``gpu_figure("12,345 samples/s (1 rank)")``: the figure this check reports in the table."""

    def record(text: str) -> None:
        request.node.user_properties.append((FIGURE_KEY, text))

    return record


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = os.environ.get(REPORT_ENV)
    if not path or "gpu" not in report.keywords:
        return
    row = _rows.get(report.nodeid) or new_row(report.nodeid)
    if report.skipped:
        message = skip_reason(report.longrepr)
    elif report.failed:
        message = report.longreprtext
    else:
        message = ""
    figures = [str(value) for key, value in report.user_properties if key == FIGURE_KEY]
    _rows[report.nodeid] = add_phase(row, when=report.when, outcome=report.outcome, duration=report.duration,
                                     message=message, figures=figures)
    if report.when == "teardown":
        append_row(Path(path), _rows.pop(report.nodeid))
