"""A task's stack file (written when it gave up in a collective, or was stopped while running) and the table read
from the files into a verdict (``explained``): the sentence leads the message, the table goes into its dict."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from orchestrator.records.restarts.blame import Blame
from orchestrator.records.restarts.rankoutcome import RankOutcome
from orchestrator.records.stacks import StackFile, explained, places_path, stack_path
from orchestrator.spec.runconfig import LOG_DIR


@pytest.fixture
def job_dir(tmp_path: Path) -> Path:
    (tmp_path / LOG_DIR).mkdir()
    return tmp_path


def _record(rank: int, kind: str, code: int | None) -> RankOutcome:
    return RankOutcome(rank=rank, world_size=2, run="local", restart=0, kind=kind,  # type: ignore[arg-type]
                       exit_code=code, started=1.0, ended=2.0)


def _stuck_here() -> None:
    raise TimeoutError("collective timed out")


def test_a_waiter_and_a_stopped_rank_leave_their_stacks_and_the_verdict_names_the_stopped_one(job_dir: Path) -> None:
    waiter, stopped = StackFile(), StackFile()
    waiter.start(job_dir, 0)
    stopped.start(job_dir, 1)
    try:
        _stuck_here()
    except TimeoutError as exc:
        waiter.waited(exc)
    stopped.stopped(sys._getframe())
    assert "this rank waited in a collective" in stack_path(job_dir, 0).read_text()
    found = Blame(kind="stuck", ranks=(1,), message="rank 1 stopped making progress")
    records = [_record(0, "waited", 3), _record(1, "signalled", -15)]
    told = explained(job_dir, found, records, 2, write=True)
    assert told is not None and told.place is not None
    # the waiter's collective is not torch's here: the header says it waited, its line is the user's
    assert told.place.startswith("rank 1 stopped at test_stacks.py:")
    assert "rank 0 waited in a collective at test_stacks.py:" in told.place
    assert told.message == f"{told.place}; rank 1 stopped making progress" and told.ranks == (1,)
    table = json.loads(places_path(job_dir).read_text())
    assert table["culprit"] == told.place and [r["state"] for r in table["ranks"]] == ["collective", "user"]
    assert told.as_dict()["places"] == table["ranks"]


def test_a_new_attempt_removes_the_last_attempts_stack(job_dir: Path) -> None:
    stack = StackFile()
    stack.start(job_dir, 0)
    stack.stopped(sys._getframe())
    assert stack_path(job_dir, 0).is_file()
    StackFile().start(job_dir, 0)
    assert not stack_path(job_dir, 0).exists()


def test_a_failure_that_is_no_hang_is_left_as_it_is(job_dir: Path) -> None:
    found = Blame(kind="failed", ranks=(0,), message="rank 0 exited with code 1")
    assert explained(job_dir, found, [_record(0, "failed", 1)], 2, write=True) is found
    stuck = Blame(kind="stuck", ranks=(1,), message="rank 1 stopped making progress")  # no stack files: as it was
    assert explained(job_dir, stuck, [_record(0, "waited", 3)], 2, write=True) is stuck
    assert not places_path(job_dir).exists()


def test_the_mark_of_a_rank_that_answered_sigterm_is_the_one_its_log_gets() -> None:
    from orchestrator.records.stacks import STOPPED_MARK
    from orchestrator.task.hang import STOPPED_NOTE

    assert STOPPED_MARK in STOPPED_NOTE


def test_after_a_timed_out_collective_the_others_get_a_short_grace(job_dir: Path) -> None:
    from orchestrator.records.joblayout import outcome_path
    from orchestrator.records.stacks import TIMED_OUT_GRACE_S, grace_after

    waited = RankOutcome(rank=0, world_size=2, run="local", restart=0, kind="waited", how="timeout", exit_code=3,
                         started=1.0, ended=2.0)
    outcome_path(job_dir, 0).write_text(waited.model_dump_json())
    assert grace_after(job_dir, [0], 5.0) == TIMED_OUT_GRACE_S
    lost = waited.model_copy(update={"how": "lost"})  # a peer closed the connection: it may still be dying
    outcome_path(job_dir, 0).write_text(lost.model_dump_json())
    assert grace_after(job_dir, [0], 5.0) == 5.0
    assert grace_after(job_dir, [1], 5.0) == 5.0  # no record
