"""views/cells.py: the sparkline, the progress bar and the columns of orch top's table."""

from __future__ import annotations

import math

from orchestrator.service.board import JobRow
from orchestrator.views.cells import COLUMNS, SPARKS, bar, cells, sparkline


def test_a_sparkline_goes_from_the_lowest_to_the_highest_block() -> None:
    assert sparkline([3.0, 2.0, 1.0]) == SPARKS[-1] + SPARKS[len(SPARKS) // 2] + SPARKS[0]
    assert sparkline([1.0, 1.0]) == SPARKS[len(SPARKS) // 2] * 2  # flat
    assert sparkline([]) == "" and sparkline([math.nan, 1.0, math.inf]) == SPARKS[len(SPARKS) // 2]
    assert len(sparkline([float(i) for i in range(100)], width=12)) == 12  # the last points only


def test_a_bar_shows_the_share_done() -> None:
    assert bar(0.4) == "████░░░░░░  40%"
    assert bar(None) == "" and bar(2.0).startswith("██████████ ") and bar(math.nan) == ""


def test_a_rows_cells_follow_the_columns() -> None:
    row = JobRow(key="/j", name="train", job_id="7", mode="slurm", state="FAILED", terminal=True, nodes="node2",
                 epoch="1/2", step="5/10", done=0.25, loss=0.123456, trend=(2.0, 1.0), restarts="1+0", goodput=0.5,
                 failure={"rank": 1, "node": "node2", "message": "rank 1 failed"})
    shown = dict(zip(COLUMNS, cells(row), strict=True))
    assert shown["PROGRESS"] == "██░░░░░░░░  25% ep 1/2 step 5/10"
    assert (shown["LOSS"], shown["RESTARTS"], shown["GOODPUT"], shown["BLAMED"]) == ("0.1235", "1+0", "50%",
                                                                                     "rank 1 @ node2")
    local = JobRow(key="/l", name="here", job_id=None, mode="local", state="UNKNOWN", terminal=False)
    assert dict(zip(COLUMNS, cells(local), strict=True))["JOBID"] == "local"
