"""The time budget (spec/budget.py), a pure function: lead time, first checkpoint, end, and the warnings with
the value that would do; no numbers without history."""

from __future__ import annotations

import pytest

from orchestrator.spec.budget import Measured, Planned, budget, suggested_time

# 10 s start-up, 0.5 s a step, 100 steps an epoch (50 s of training), 5 s of evaluation, saves 2 s (4 s on disk)
M = Measured(runs=2, startup_s=10.0, step_s=0.5, steps_per_epoch=100, eval_s=5.0, save_s=2.0, durable_s=4.0)


def plan(time_s: int | None = 3600, preempt_before: int = 120, epochs: int = 3, every: float = 0.0,
         checkpoint: bool = True, max_time_s: int | None = None) -> Planned:
    return Planned(time_s=time_s, preempt_before=preempt_before, epochs=epochs, checkpoint=checkpoint,
                   checkpoint_every=every, max_time_s=max_time_s)


@pytest.mark.parametrize(("planned", "lead", "first", "end"), [
    # epoch checkpoints only: the first after the first epoch and its evaluation; every epoch one save
    (plan(), 15, 10 + 50 + 5 + 4, 10 + 3 * (50 + 5 + 2)),
    # periodic every 20 s: the first at 20 s; two periodic saves per epoch (20, 40) plus the epoch's
    (plan(every=20), 15, 10 + 20 + 4, 10 + 3 * (50 + 5 + 3 * 2)),
    # a period longer than the epoch: the epoch's checkpoint comes first
    (plan(every=1800), 15, 69, 10 + 3 * 57),
    # checkpoint=false: no lead time from saves, no first checkpoint, no saves in the end
    (plan(checkpoint=False), None, None, 10 + 3 * 55),
])
def test_lead_first_checkpoint_and_end(planned: Planned, lead: int | None, first: float | None, end: float) -> None:
    found = budget(M, planned)
    assert (found.lead_s, found.first_checkpoint_s) == (lead, first)
    assert found.end_s == pytest.approx(end)


def test_margin_is_a_quarter_above_forty_seconds() -> None:
    slow = Measured(runs=1, startup_s=1.0, step_s=10.0, steps_per_epoch=1, eval_s=0.0, save_s=70.0, durable_s=70.0)
    assert budget(slow, plan(time_s=None)).lead_s == 100  # 80 s + 20 s


@pytest.mark.parametrize(("planned", "warned", "hints"), [
    (plan(), [], []),  # an hour holds everything
    (plan(preempt_before=3), ["preempt_before=3 s is shorter"], ["launcher.preempt_before: 15"]),
    # 60 s to train, the first checkpoint at 69 s: --time (69 s + 120 s) x 1.1 -> 4 min, or a checkpoint within
    # 60 s less start-up and the save (46 s, 41 with slack)
    (plan(time_s=180), ["cannot reach the first checkpoint", "cannot reach the end"],
     ["use --time 00:04:00, or checkpoint_every=41", "use --time 00:06:00"]),
    # the first checkpoint fits (69 s of 100 s), the end (181 s) does not
    (plan(time_s=220), ["cannot reach the end"], ["use --time 00:06:00, or let the run continue"]),
    (plan(time_s=None), [], []),  # UNLIMITED
    # the --time that would is over the partition's limit: said so
    (plan(time_s=180, max_time_s=300), ["first checkpoint", "end"], ["use --time 00:04:00", "more than the "
                                                                     "partition's max_time 00:05:00"]),
])
def test_warnings_name_the_value_that_would_do(planned: Planned, warned: list[str], hints: list[str]) -> None:
    found = budget(M, planned)
    assert len(found.warnings) == len(warned), found.warnings
    for advice, words, hint in zip(found.warnings, warned, hints, strict=True):
        assert words in advice.message and hint in advice.hint, advice


def test_no_history_has_no_numbers() -> None:
    found = budget(None, plan(time_s=60, preempt_before=30), no_history="no history (no earlier run)")
    assert found.line() == "no history (no earlier run)" and found.warnings == ()
    data = found.as_dict()
    assert data["history"] == 0 and data["measured"] is None and data["lead_s"] is None and data["end_s"] is None


def test_partial_measurements_estimate_only_what_they_can() -> None:
    """A run that never finished: step times, no start-up, no saves -> no lead, no first checkpoint, no end."""
    partial = Measured(runs=1, startup_s=None, step_s=0.5, steps_per_epoch=100, eval_s=None, save_s=None,
                       durable_s=None)
    found = budget(partial, plan(time_s=200))
    assert (found.lead_s, found.first_checkpoint_s, found.end_s, found.warnings) == (None, None, None, ())
    assert "not enough measured" in found.line()


def test_line_and_json() -> None:
    bounded = Measured(runs=2, startup_s=10.0, step_s=0.5, steps_per_epoch=100, eval_s=5.0, save_s=2.0,
                       durable_s=4.0, save_bound=True)
    found = budget(bounded, plan())
    line = found.line()
    assert line.startswith("from 2 earlier run(s): start-up 10 s, 0.5 s/step x 100 steps/epoch, checkpoint at most 4 s")
    assert "preemption lead 15 s (preempt_before 120 s); first checkpoint at ~00:01:09, end at ~00:03:01 of --time " \
           "01:00:00" in line
    data = found.as_dict()
    assert data["measured"]["save_is_upper_bound"] is True and data["lead_s"] == 15 and data["warnings"] == []


@pytest.mark.parametrize(("seconds", "before", "wanted"), [(0, 0, 0), (1, 0, 60), (69, 120, 240), (545, 60, 720)])
def test_suggested_time_rounds_up_to_minutes(seconds: float, before: int, wanted: int) -> None:
    assert suggested_time(seconds, before) == wanted
