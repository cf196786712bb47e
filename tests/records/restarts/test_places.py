"""Each rank's place at the end of a hang, read from stacks recorded in real runs (2 gloo ranks under
``orch run --collective-timeout 5``, the scripts tests/scripts/hang_*.py), and the rank the others waited for."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.records.restarts.places import Place, classify, culprit, last_dump, parse_frames, sentence, table
from orchestrator.records.stacks import STOPPED_MARK

FIXTURES = Path(__file__).parents[2] / "golden" / "stacks"  # recorded from real runs of tests/scripts/hang_*.py


def _stacks(case: str) -> dict[int, str | None]:
    return {r: (FIXTURES / case / f"rank-{r}.txt").read_text(encoding="utf-8") for r in (0, 1)}


def _where(place: Place) -> tuple[str, int | None, str | None, str | None]:
    return (Path(place.file).name if place.file else "", place.line, place.function, place.call)


def test_a_stuck_data_loader_is_named_with_its_line_and_the_call_it_is_in() -> None:
    rank0, rank1 = table(_stacks("loader"), {0: None, 1: None})
    assert (rank0.state, rank0.op) == ("collective", "all_reduce")  # DDP's all-reduce, in backward
    assert _where(rank0) == ("hang_loader.py", 26, "<module>", "loss.backward")
    assert rank1.state == "user" and rank1.op is None
    assert _where(rank1) == ("hang_loader.py", 19, "load_batch", "time.sleep")
    assert culprit([rank0, rank1]) == rank1
    assert sentence([rank0, rank1]) == ("rank 1 stopped at hang_loader.py:19 in load_batch (time.sleep) while rank 0 "
                                        "waited in all_reduce at hang_loader.py:26 in <module> (loss.backward)")


def test_a_faulthandler_dump_is_read_innermost_first() -> None:
    text = (FIXTURES / "loader" / "rank-1.faulthandler.txt").read_text(encoding="utf-8")
    frames = parse_frames(text)
    assert frames[0].function == "_run_module_as_main" and frames[-1].function == "load_batch"
    place = classify(1, text, None)
    assert place.state == "user" and (Path(place.file or "").name, place.line) == ("hang_loader.py", 19)
    assert place.call is None  # faulthandler prints no code: the call is not known


def test_a_barrier_only_rank_0_reaches_blames_rank_0() -> None:
    places = table(_stacks("barrier"), {0: 3, 1: 3})
    assert [(p.state, p.op) for p in places] == [("collective", "barrier"), ("collective", "all_reduce")]
    assert culprit(places) == places[0]
    assert sentence(places) == ("rank 0 was in barrier at hang_barrier.py:23 in <module> (dist.barrier) while rank 1 "
                                "waited in all_reduce at hang_barrier.py:20 in <module> (loss.backward) "
                                "(mismatched collectives)")


def test_mismatched_collectives_are_each_named() -> None:
    places = table(_stacks("mismatch"), {0: 3, 1: 3})
    assert [(p.op, p.call) for p in places] == [("all_reduce", "dist.all_reduce"), ("broadcast", "dist.broadcast")]
    assert "(mismatched collectives)" in (sentence(places) or "")


def test_an_endless_python_loop_is_named_in_its_function() -> None:
    rank0, rank1 = table(_stacks("spin"), {0: 3, 1: None})
    assert rank0.op == "all_reduce" and _where(rank0)[:3] == ("hang_spin.py", 23, "<module>")
    assert rank1.state == "user" and _where(rank1) == ("hang_spin.py", 12, "spin", None)
    assert culprit([rank0, rank1]) == rank1


def test_a_rank_that_exited_is_the_one_waited_for() -> None:
    stacks = _stacks("spin")
    places = table({0: stacks[0], 1: None}, {0: 3, 1: 0})
    assert places[1] == Place(rank=1, state="exited", exit_code=0)
    assert (sentence(places) or "").startswith("rank 1 had exited with code 0 while rank 0 waited in all_reduce at "
                                               "hang_spin.py:23")


@pytest.mark.parametrize("case", ["loader", "barrier", "mismatch", "spin"])
def test_no_rank_waiting_in_a_collective_is_no_hang(case: str) -> None:
    places = [p for p in table(_stacks(case), {}) if p.state != "collective"]
    assert culprit(places) is None and sentence(places) is None


def test_ranks_in_the_same_collective_name_no_culprit() -> None:
    rank0 = classify(0, _stacks("loader")[0], 3)
    assert culprit([rank0, Place(**{**rank0.as_dict(), "rank": 1})]) is None


def test_a_user_frame_is_outside_torch_orch_packages_and_the_standard_library() -> None:
    text = ('Traceback (most recent call last):\n'
            '  File "/home/u/proj/train.py", line 7, in <module>\n    step(x)\n'
            '  File "/opt/venv/lib/python3.12/site-packages/lightning/fit.py", line 3, in run\n    go()\n'
            '  File "/usr/lib/python3.12/threading.py", line 9, in wait\n    self._wait()\n')
    place = classify(0, text, None)
    assert (place.state, place.file, place.line, place.call) == ("user", "/home/u/proj/train.py", 7, "step")


def test_a_killed_rank_and_a_rank_without_a_stack_are_said_as_such() -> None:
    waiter = _stacks("spin")[0]
    killed = table({0: waiter, 1: None}, {0: 3, 1: -9})
    assert (sentence(killed) or "").startswith("rank 1 had been killed by SIGKILL while rank 0 waited in all_reduce")
    silent = table({0: waiter, 1: None}, {0: 3, 1: None})
    assert (sentence(silent) or "").startswith("rank 1 stopped where Python could not answer (no stack; see its log)")


def test_a_rank_blocked_in_native_code_is_read_from_the_dump_at_the_end_of_its_log() -> None:
    log = (FIXTURES / "native" / "local-rank1.out").read_text(encoding="utf-8")
    dump = last_dump(log, STOPPED_MARK)
    assert dump is not None and dump.startswith("Current thread") and "hung at" not in dump
    place = classify(1, dump, None)
    assert place.state == "user" and (Path(place.file or "").name, place.line) == ("hang_native.py", 15)
    assert place.function == "block_in_native_code"


def test_a_dump_followed_by_the_stopped_note_is_not_read_from_the_log() -> None:
    log = (FIXTURES / "loader" / "local-rank1.out").read_text(encoding="utf-8")  # it answered: its stack file counts
    assert STOPPED_MARK in log and last_dump(log, STOPPED_MARK) is None
    assert last_dump("rank 1 hung at 1.0\n", STOPPED_MARK) is None


def test_a_frameworks_signal_handler_on_top_of_the_stuck_line_is_not_where_the_rank_was() -> None:
    """Lightning's SIGTERM handler broadcasts the signal to the other ranks: the stopped rank 1 fails in that
    broadcast, on top of the ``time.sleep`` it was stuck in (recorded from tests/scripts/hang_lightning.py)."""
    rank0, rank1 = table(_stacks("lightning"), {0: None, 1: None})
    assert (rank0.state, rank0.op) == ("collective", "all_reduce")
    assert rank1.state == "user" and rank1.op is None
    assert _where(rank1) == ("hang_lightning.py", 25, "training_step", "time.sleep")
    assert culprit([rank0, rank1]) == rank1
    assert sentence([rank0, rank1]) == ("rank 1 stopped at hang_lightning.py:25 in training_step (time.sleep) while "
                                        "rank 0 waited in all_reduce at hang_lightning.py:39 in main (trainer.fit)")
