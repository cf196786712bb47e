"""views/detail.py: the text of orch top's detail pane from a selected job's data (service/detail.py's Detail):
rank 0's log tail, one line per rank (a large world: the first ranks and a count), start-up, attempts, ledger."""

from __future__ import annotations

from pathlib import Path

from orchestrator.service.detail import Detail, RankState
from orchestrator.views.detail import MAX_RANKS_SHOWN, detail_text


def test_the_pane_of_a_failed_job() -> None:
    detail = Detail(key="/j/train", log_file=Path("/j/train/logs/5-rank0.out"), log=("line 38", "line 39"),
                    ranks=(RankState(0, "waited", "node1", "epoch 1 step 7", "lost the connection to another rank"),
                           RankState(1, "failed", "node2", "epoch 1 step 7", "boom"), RankState(2, "not started")),
                    startup="startup (rank 0): queued 1.5 s", attempts=("attempt 0 (requeue 0): failed rank 1",),
                    ledger="goodput 50.0%")
    assert detail_text(detail).splitlines() == [
        "rank 0's log (/j/train/logs/5-rank0.out):", "  line 38", "  line 39", "ranks:",
        "  rank 0: waited on node1, epoch 1 step 7: lost the connection to another rank",
        "  rank 1: failed on node2, epoch 1 step 7: boom", "  rank 2: not started",
        "startup (rank 0): queued 1.5 s", "attempt: attempt 0 (requeue 0): failed rank 1", "goodput 50.0%"]


def test_a_job_without_records_yet() -> None:
    detail = Detail(key="/j/here", log_file=Path("/j/here/logs/local-rank0.out"), log=(),
                    ranks=(RankState(0, "not started"), RankState(1, "not started")), startup=None, attempts=(),
                    ledger=None)
    text = detail_text(detail)
    assert "(empty so far)" in text and "rank 1: not started" in text
    assert "recorded in result.json when rank 0 ends" in text


def test_a_large_world_shows_the_first_ranks_and_a_count() -> None:
    ranks = tuple(RankState(r, "running") for r in range(MAX_RANKS_SHOWN + 36))
    text = detail_text(Detail(key="/j/big", log_file=Path("/j/big/x.out"), log=("hi",), ranks=ranks, startup=None,
                              attempts=(), ledger=None))
    assert f"rank {MAX_RANKS_SHOWN - 1}: running" in text and f"rank {MAX_RANKS_SHOWN}: running" not in text
    assert "... and 36 more ranks" in text
