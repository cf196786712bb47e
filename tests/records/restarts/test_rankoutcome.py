"""The ranks' outcome records read back: a record or why a file is not one, and which records are the current run's."""

from __future__ import annotations

from typing import Any

from orchestrator.records.restarts.rankoutcome import RankOutcome, current_run, parse_outcome

T0 = 1_700_000_000.0


def rec(rank: int, kind: str, *, restart: int = 0, run: str = "local", ended: float | None = None,
        **extra: Any) -> RankOutcome:
    data: dict[str, Any] = {"rank": rank, "world_size": 2, "run": run, "restart": restart, "kind": kind,
                            "started": T0, "ended": ended if ended is not None or kind == "running" else T0 + 100}
    data.update(extra)
    return RankOutcome.model_validate(data)


def test_parse_outcome_never_raises_on_odd_text() -> None:
    for text in ("", "null", "1e999", '"x"', "{}", '{"rank": 0}', "\x00"):
        assert isinstance(parse_outcome(text), str)


def test_parse_outcome_reads_a_whole_record_and_names_the_bad_field() -> None:
    good = rec(1, "failed", exit_code=1, reason="boom")
    assert parse_outcome(good.model_dump_json()) == good
    assert parse_outcome(good.model_dump_json().replace('"rank":1', '"rank":-1')) == \
        "rank: Input should be greater than or equal to 0"


def test_two_records_of_one_rank_the_later_counts() -> None:
    current, _ = current_run([rec(0, "running"), rec(0, "failed", exit_code=1, ended=T0 + 5)])
    assert current[0].kind == "failed"


def test_the_newest_restart_is_the_current_run_unless_one_is_asked_for() -> None:
    records = [rec(0, "failed", exit_code=1, restart=0), rec(0, "running", restart=1), rec(1, "running", run="9")]
    current, notes = current_run(records)
    assert {r: o.restart for r, o in current.items()} == {0: 1}
    assert notes == ["rank 0: the record of restart 0 set aside (this run is restart 1)",
                     "rank 1: the record of restart 0 set aside (this run is restart 1)"]
    current, notes = current_run(records, run="local", restart=0)
    assert [o.kind for o in current.values()] == ["failed"]
    assert notes[0] == "rank 1: a record of job 9 set aside (not job local)"
