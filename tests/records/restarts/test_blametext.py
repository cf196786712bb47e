"""The words of a blame's message: how a rank exited and what became of a rank that stopped making progress."""

from __future__ import annotations

from typing import Any

from orchestrator.records.restarts.blametext import describe_exit, fate, final_words, listed, was
from orchestrator.records.restarts.rankoutcome import RankOutcome

T0 = 1_700_000_000.0


def rec(rank: int, kind: str, **extra: Any) -> RankOutcome:
    data: dict[str, Any] = {"rank": rank, "world_size": 2, "run": "local", "restart": 0, "kind": kind,
                            "started": T0, **extra}
    return RankOutcome.model_validate(data)


def test_an_exit_is_a_code_or_a_signal_by_name() -> None:
    assert describe_exit(3) == "exited with code 3"
    assert describe_exit(-9) == "was killed by SIGKILL"
    assert describe_exit(-99) == "was killed by signal 99"


def test_the_fate_of_a_stuck_rank_names_its_last_step_before_the_waiter_gave_up() -> None:
    waiter = rec(1, "waited", ended=T0 + 60)
    stopped = rec(0, "signalled", signal="SIGTERM", stopped_by="orch run",
                  last_step={"epoch": 2, "step": 7, "time": T0 + 20})
    assert fate(stopped, waiter) == ("was still running and was stopped by orch run (SIGTERM); its last step: "
                                     "epoch 2, step 7, 40 s before rank 1 gave up")
    assert fate(None, waiter) == "left no record of this run (it never started, or its node was lost)"
    assert fate(rec(0, "running"), waiter).endswith("; it had finished no training step")


def test_final_words_and_lists_of_ranks() -> None:
    assert final_words(rec(0, "running")) == "ended without a word"
    assert final_words(rec(0, "signalled", signal="SIGINT")) == "was stopped (SIGINT)"
    assert final_words(rec(0, "failed", exit_code=1)) == "exited with code 1"
    assert (listed([0, 2]), was([0, 2]), was([1])) == ("0, 2", "were", "was")
