"""Which of a sweep's elements ``orch resubmit --failed`` queues again (slurm/rerun.py): a pure choice over
the elements' states (orch's reading of Slurm's state table), the ``--array`` value with the sweep's throttle."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.errors import OrchError
from orchestrator.slurm.rerun import ElementState, array_spec, choose, throttle_of
from orchestrator.slurm.state import state_info

FOLDER = Path("/jobs/smoke-20260101-000000-aaaaaa")


def elements(*states: str) -> list[ElementState]:
    return [ElementState(index=i, job_id=f"40_{i}", state=s, orch_state=state_info(s).orch if s != "NOT_QUEUED" else
                         "not queued", terminal=state_info(s).terminal or s == "NOT_QUEUED", job_dir=FOLDER / str(i))
            for i, s in enumerate(states)]


@pytest.mark.parametrize(("states", "chosen"), [
    (("COMPLETED", "FAILED", "COMPLETED", "TIMEOUT"), [1, 3]),
    (("NODE_FAIL", "OUT_OF_MEMORY", "DEADLINE", "BOOT_FAIL"), [0, 1, 2, 3]),
    (("CANCELLED", "FAILED", "PREEMPTED"), [1]),  # a cancel was asked for; a preempted one requeues itself
    (("UNKNOWN", "FAILED"), [1]),  # a state Slurm no longer knows is neither running nor failed
])
def test_failed_and_timed_out_elements_are_chosen(states: tuple[str, ...], chosen: list[int]) -> None:
    assert [e.index for e in choose(FOLDER, elements(*states))] == chosen


@pytest.mark.parametrize(("states", "says", "hint"), [
    (("COMPLETED", "COMPLETED", "CANCELLED"), "failed or timed out (1 CANCELLED, 2 COMPLETED)", "orch compare"),
    (("FAILED", "RUNNING", "PENDING"), "still has elements queued or running (40_1 RUNNING, 40_2 PENDING)",
     "orch status 40_1"),
    (("FAILED", "COMPLETING"), "40_1 COMPLETING", "wait until they end"),
])
def test_refusals_say_why(states: tuple[str, ...], says: str, hint: str) -> None:
    with pytest.raises(OrchError) as caught:
        choose(FOLDER, elements(*states))
    assert says in caught.value.message and hint in (caught.value.hint or "")


@pytest.mark.parametrize(("indices", "throttle", "spec"), [([3, 1], None, "1,3"), ([0], 2, "0%2"),
                                                           ([2, 5, 9], 1, "2,5,9%1")])
def test_array_spec(indices: list[int], throttle: int | None, spec: str) -> None:
    chosen = [ElementState(i, None, "FAILED", "failed", True, FOLDER / str(i)) for i in indices]
    assert array_spec(chosen, throttle) == spec


def test_the_throttle_comes_from_array_json(tmp_path: Path) -> None:
    assert throttle_of(tmp_path) is None  # no array.json
    (tmp_path / "array.json").write_text('{"throttle": 2}')
    assert throttle_of(tmp_path) == 2
    (tmp_path / "array.json").write_text('{"throttle": null}')
    assert throttle_of(tmp_path) is None
