"""``check_identity``: the check every rank makes on a checkpoint before training, value by value (a checkpoint of
another job, counters that make no sense, a model of another shape). Through a real ``orch run --resume``, where the
ranks refuse with exit 2 and nothing trained: tests/records/test_resumecheck_damaged.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from orchestrator.runtime.checkpoint import CheckpointError
from orchestrator.runtime.identity import check_identity


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))


def _state(**changes: Any) -> dict[str, Any]:
    """A checkpoint of job 'smoke' written by 2 ranks mid-epoch, as read_checkpoint returns it."""
    state: dict[str, Any] = {"job": "smoke", "epoch": 1, "step": 5, "world_size": 2, "batch_size": 16,
                             "partial_seconds": 1.5, "ranks": [{"rng": {}, "tally": {}} for _ in range(2)],
                             "model": _model().state_dict()}
    state.update(changes)
    return state


def _renamed(state: dict[str, Any]) -> dict[str, Any]:
    key = next(iter(state["model"]))
    state["model"]["renamed." + key] = state["model"].pop(key)
    return state


def _grown(state: dict[str, Any]) -> dict[str, Any]:
    key = next(iter(state["model"]))
    state["model"][key] = torch.zeros(tuple(s + 1 for s in state["model"][key].shape))
    return state


def _dropped(state: dict[str, Any]) -> dict[str, Any]:
    state["model"].pop(next(iter(state["model"])))
    return state


DAMAGED: dict[str, tuple[Callable[[], dict[str, Any]], str]] = {
    "another job": (lambda: _state(job="mnist"), "written by job 'mnist', not by 'smoke'"),
    "renamed weight": (lambda: _renamed(_state()), "does not match the job's model (missing 0.weight; unexpected "
                                                   "renamed.0.weight)"),
    "reshaped weight": (lambda: _grown(_state()), "0.weight has shape (4, 5), the model (3, 4)"),
    "weight missing": (lambda: _dropped(_state()), "does not match the job's model (missing 0.weight)"),
    "weight not a tensor": (lambda: _state(model={**_model().state_dict(), "0.bias": [0, 0, 0]}),
                            "0.bias has shape list"),
    "no model": (lambda: _state(model=None), "holds no model state"),
    "ranks empty": (lambda: _state(ranks=[]), "ranks hold 0 entries, expected one RNG record for each of its 2"),
    "ranks too many": (lambda: _state(ranks=[{"rng": {}, "tally": {}}] * 6), "ranks hold 6 entries"),
    "ranks without rng": (lambda: _state(ranks=[{"tally": {}}] * 2), "ranks hold 2 entries"),
    "ranks not a list": (lambda: _state(ranks={}), "ranks hold dict"),
    "epoch negative": (lambda: _state(epoch=-1), "epoch is -1, expected a whole number >= 0"),
    "epoch text": (lambda: _state(epoch="1"), "epoch is '1'"),
    "epoch true": (lambda: _state(epoch=True), "epoch is True"),
    "step negative": (lambda: _state(step=-5), "step is -5"),
    "world size zero": (lambda: _state(world_size=0), "world_size is 0, expected a whole number >= 1"),
    "batch size missing": (lambda: _state(batch_size=None), "batch_size is None"),
    "mid-epoch without its seconds": (lambda: _state(partial_seconds=None), "stopped mid-epoch but has no "
                                                                            "partial_seconds"),
}


def test_the_jobs_own_checkpoint_passes() -> None:
    check_identity(_state(), job_name="smoke", model=_model())
    check_identity(_state(step=0, partial_seconds=None), job_name="smoke", model=_model())  # at an epoch's end
    check_identity(_state(job=None), job_name="smoke", model=_model())  # an older orch's: no job recorded


@pytest.mark.parametrize("case", list(DAMAGED))
def test_a_damaged_checkpoint_is_refused_naming_what_is_wrong(case: str) -> None:
    make, says = DAMAGED[case]
    with pytest.raises(CheckpointError) as caught:
        check_identity(make(), job_name="smoke", model=_model())
    assert says in str(caught.value)
    assert caught.value.hint
