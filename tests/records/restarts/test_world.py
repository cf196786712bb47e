"""The world check's verdict (records/restarts/world.py): formed, never formed, never initialised, subgroups
(never counted: only the default group is recorded), ranks not watched, one rank's own view, and the
current run of a folder's records."""

from __future__ import annotations

import pytest

from orchestrator.records.restarts.rankoutcome import RankOutcome, WorldJoin
from orchestrator.records.restarts.world import (
    NEVER_FORMED_HINT,
    NEVER_INITIALISED_HINT,
    judge,
    rank_problem,
    world_verdict,
)

NONE = WorldJoin()  # watched, init_process_group never called


def joined(size: int, rank: int, orch: bool | None = True) -> WorldJoin:
    return WorldJoin(size=size, rank=rank, backend="gloo", orch_rendezvous=orch)


def test_a_formed_world_has_no_verdict() -> None:
    assert world_verdict({0: joined(2, 0), 1: joined(2, 1)}, 2) is None
    assert world_verdict({r: joined(8, 7 - r) for r in range(8)}, 8) is None  # ranks permuted: still one world


def test_a_formed_world_at_a_rendezvous_of_the_scripts_own_is_fine() -> None:
    """A hard-coded tcp:// address with the job's world size forms the world: no false alarm."""
    assert world_verdict({0: joined(2, 0, orch=False), 1: joined(2, 1, orch=False)}, 2) is None


def test_ranks_alone_in_worlds_of_one_never_formed_a_process_group() -> None:
    found = world_verdict({0: joined(1, 0, orch=False), 1: joined(1, 0, orch=False)}, 2)
    assert found is not None
    assert found.kind == "never_formed"
    assert found.message.startswith("the 2 ranks never formed a process group: 2 independent copies trained (")
    assert "ranks 0, 1 initialised a world of 1 rank (gloo) not at orch's rendezvous" in found.message
    assert found.ranks == (0, 1)
    assert found.hint == NEVER_FORMED_HINT and "--independent-ranks" in found.hint


def test_no_rank_that_called_init_is_never_initialised() -> None:
    found = world_verdict({0: NONE, 1: NONE, 2: NONE}, 3)
    assert found is not None
    assert (found.kind, found.ranks) == ("never_initialised", (0, 1, 2))
    assert found.message == "none of the 3 ranks called init_process_group: 3 independent copies trained"
    assert found.hint == NEVER_INITIALISED_HINT


def test_some_ranks_alone_and_some_never_initialised() -> None:
    found = world_verdict({0: joined(1, 0, orch=False), 1: NONE}, 2)
    assert found is not None and found.kind == "never_formed"
    assert "2 independent copies trained" in found.message
    assert "rank 0 initialised a world of 1 rank" in found.message
    assert "rank 1 never called init_process_group" in found.message


def test_two_worlds_of_two_in_a_job_of_four() -> None:
    found = world_verdict({0: joined(2, 0), 1: joined(2, 1), 2: joined(2, 0, False), 3: joined(2, 1, False)}, 4)
    assert found is not None and found.kind == "never_formed"
    assert found.message.startswith("the 4 ranks never formed one process group of 4 (")
    assert "independent copies" not in found.message  # pairs trained together: not N copies
    assert "ranks 0, 1 initialised a world of 2 ranks (gloo) at orch's rendezvous" in found.message
    assert "ranks 2, 3 initialised a world of 2 ranks (gloo) not at orch's rendezvous" in found.message


def test_worlds_of_the_right_size_with_repeated_ranks_are_not_one_world() -> None:
    found = world_verdict({0: joined(2, 0), 1: joined(2, 0)}, 2)
    assert found is not None and found.kind == "never_formed"
    assert "ranks 0, 1 were each rank 0 of a world of 2" in found.message


def test_a_store_orch_cannot_place_is_said_so() -> None:
    found = world_verdict({0: joined(1, 0, orch=None), 1: joined(1, 0, orch=None)}, 2)
    assert found is not None and "at a store of its own" in found.message


@pytest.mark.parametrize("worlds", [
    {0: None, 1: None},  # not watched: a job file, an older record, --independent-ranks
    {0: joined(1, 0)},  # a job of one rank: alone is right
])
def test_nothing_watched_or_one_rank_has_no_verdict(worlds: dict[int, WorldJoin | None]) -> None:
    assert world_verdict(worlds, len(worlds)) is None


def test_while_the_ranks_run_only_a_world_of_another_size_counts() -> None:
    assert world_verdict({0: NONE, 1: NONE}, 2, ended=False) is None  # they may call it yet
    assert world_verdict({0: joined(2, 0), 1: NONE}, 2, ended=False) is None
    found = world_verdict({0: joined(1, 0, False), 1: NONE}, 2, ended=False)
    assert found is not None and found.ranks == (0,)
    assert found.message.startswith("the 2 ranks never formed one process group of 2 (rank 0 initialised")


def test_many_situations_are_counted_not_listed() -> None:
    worlds = {r: joined(1 + r % 6, 0, False) for r in range(12) if 1 + r % 6 != 12}
    found = world_verdict(worlds, 12)
    assert found is not None and found.message.endswith("; and 2 other situation(s))")


def test_one_ranks_own_view() -> None:
    assert rank_problem(joined(2, 1), 2) is None
    assert rank_problem(NONE, 1) is None and rank_problem(joined(1, 0), 1) is None
    assert rank_problem(NONE, 2) == ("the job's 2 ranks never formed a process group: this rank never called "
                                     "init_process_group and trained alone")
    alone = rank_problem(joined(1, 0, False), 4)
    assert alone == ("the job's 4 ranks never formed a process group: this rank initialised a world of 1 rank (gloo) "
                     "not at orch's rendezvous (MASTER_ADDR:MASTER_PORT) and trained alone")
    assert "trained alone" not in (rank_problem(joined(2, 0), 4) or "")


def record(rank: int, world: WorldJoin | None, *, kind: str = "completed", restart: int = 0) -> RankOutcome:
    return RankOutcome.model_validate({"rank": rank, "world_size": 2, "run": "local", "restart": restart,
                                       "kind": kind, "started": 1.0 + restart, "world": world})


def test_judge_reads_the_current_run_and_waits_for_every_rank_to_end() -> None:
    old = [record(0, joined(1, 0, False), restart=0), record(1, joined(1, 0, False), restart=0)]
    assert judge([*old, record(0, joined(2, 0), restart=1), record(1, joined(2, 1), restart=1)], 2) is None
    assert judge([record(0, NONE), record(1, NONE, kind="running")], 2) is None  # rank 1 still runs
    found = judge([record(0, NONE), record(1, NONE)], 2)
    assert found is not None and found.kind == "never_initialised"
    assert judge([record(0, NONE)], 2) is None  # rank 1 left no record: not every rank ended


def test_a_record_carries_its_world_and_an_older_one_none() -> None:
    text = record(1, joined(2, 1)).model_dump_json()
    assert RankOutcome.model_validate_json(text).world == joined(2, 1)
    assert record(1, None).world is None
