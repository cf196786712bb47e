"""The typed checkpoint contents: Resume from a saved state, its checks, and older checkpoints."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.runtime.checkpoint import CheckpointError
from orchestrator.runtime.state import Resume, checkpoint_state


def saved(step: int, **changes: Any) -> dict[str, Any]:
    state = checkpoint_state(model={"w": 1}, optimizer={"state": {}}, scaler=None, epoch=1, step=step,
                             seconds=2.5, world_size=2, batch_size=8, grad_accum=2, params={"lr": 0.1}, job="j")
    tally = {"loss_sum": 1.0, "sums": [2.0], "count": 3, "skipped": 0}
    state.update(format=1, ranks=[{"tally": tally, "rng": {"r": 0}}, {"tally": tally, "rng": {"r": 1}}])
    state.update(changes)
    return state


def test_resume_reads_every_field() -> None:
    resume = Resume.from_checkpoint(saved(4))
    assert (resume.epoch, resume.step, resume.seconds, resume.grad_accum) == (1, 4, 2.5, 2)
    assert resume.mine(1, 2).rng == {"r": 1} and resume.mine(1, 4).rng == {"r": 0}
    assert resume.mine(0, 2).tally == {"loss_sum": 1.0, "sums": [2.0], "count": 3, "skipped": 0}


def test_mid_epoch_resume_needs_the_same_shape_but_an_epoch_boundary_does_not() -> None:
    Resume.from_checkpoint(saved(4)).check(world_size=2, batch_size=8, grad_accum=2)
    Resume.from_checkpoint(saved(0)).check(world_size=4, batch_size=16, grad_accum=1)
    with pytest.raises(CheckpointError, match="grad_accum 2") as info:
        Resume.from_checkpoint(saved(4)).check(world_size=2, batch_size=8, grad_accum=1)
    assert info.value.hint and "grad_accum" in info.value.hint


def test_a_checkpoint_written_before_metrics_and_accumulation_still_resumes() -> None:
    old = saved(4, ranks=[{"tally": (1.5, 3, 4), "rng": {}}])
    del old["grad_accum"]
    resume = Resume.from_checkpoint(old)
    assert resume.grad_accum == 1
    assert resume.mine(0, 1).tally == {"loss_sum": 1.5, "sums": [3], "count": 4, "skipped": 0}
