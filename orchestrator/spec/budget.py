"""A job's time budget from its own measurements (pure): the preemption lead time it needs, and whether
``--time`` reaches its first checkpoint and the end of the run.

:mod:`orchestrator.records.history` reads the measurements from earlier runs of the same job (:class:`Measured`:
start-up, seconds per training step, one checkpoint save); the submit supplies what it plans
(:class:`Planned`: ``--time``, ``launcher.preempt_before``, epochs, ``checkpoint_every``). :func:`budget`
combines them:

- the **lead time** preemption needs: one save until it is on disk, plus the step in flight when the
  signal arrives, plus a margin (a quarter of that, at least :data:`MIN_MARGIN_S`);
- the **first checkpoint**: start-up, then training until the first periodic checkpoint (``checkpoint_every``)
  or the end of the first epoch (and its evaluation), whichever comes first, plus the save;
- the **end**: start-up, every epoch (its steps, its evaluation) and every save.

The time a job may train is ``--time`` less ``preempt_before`` (the signal stops training there). A warning
(message and hint) is given when the lead time is longer than ``preempt_before``, when that time ends before
the first checkpoint, and when it ends before the run does; each hint names the value that would do
(``launcher.preempt_before``, ``--time``, ``checkpoint_every``). Without measurements the budget says so and
holds no number: nothing is guessed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from orchestrator.spec.job import TrainParams
from orchestrator.spec.runconfig import RunConfig
from orchestrator.spec.units import format_time, parse_time

MIN_MARGIN_S = 10.0  # the least margin on top of one save and one step
MARGIN_SHARE = 0.25  # ... else a quarter of them
TIME_MARGIN_SHARE = 0.1  # a suggested --time holds a tenth more than the estimate ...
TIME_ROUNDING_S = 60  # ... rounded up to whole minutes
DEFAULT_EVERY = float(TrainParams.model_fields["checkpoint_every"].default)
EVERY_SHARE = 0.9  # a suggested checkpoint_every leaves a tenth of the time that fits as slack


@dataclass(frozen=True)
class Measured:
    """What earlier runs of the job measured (None: not measured); the slowest run's value of each."""

    runs: int  # the earlier runs these come from
    startup_s: float | None  # batch start to the first training step
    step_s: float | None  # training seconds per step (micro-batch) of a rank
    steps_per_epoch: int | None
    eval_s: float | None  # per epoch beyond its training steps (evaluation)
    save_s: float | None  # one checkpoint save on the training thread (the stall, when saves are asynchronous)
    durable_s: float | None  # one checkpoint save until it is on disk (the stall plus the background write)
    save_bound: bool = False  # the saves were not counted: save_s/durable_s are at most these (one per epoch)

    def as_dict(self) -> dict[str, Any]:
        return {"runs": self.runs, "startup_s": _r(self.startup_s), "step_s": _r(self.step_s, 4),
                "steps_per_epoch": self.steps_per_epoch, "eval_s": _r(self.eval_s), "save_s": _r(self.save_s),
                "durable_s": _r(self.durable_s), "save_is_upper_bound": self.save_bound}


@dataclass(frozen=True)
class Planned:
    """What the submit plans."""

    time_s: int | None  # --time in seconds (None: UNLIMITED)
    preempt_before: int  # launcher.preempt_before
    epochs: int
    checkpoint: bool  # checkpoints at all (TrainParams.checkpoint)
    checkpoint_every: float  # seconds of training between periodic checkpoints (0: epoch ends only)
    max_time_s: int | None = None  # the partition's max_time (None: no limit)


@dataclass(frozen=True)
class Advice:
    message: str
    hint: str

    def as_dict(self) -> dict[str, str]:
        return {"message": self.message, "hint": self.hint}


@dataclass(frozen=True)
class Budget:
    planned: Planned
    measured: Measured | None
    note: str = ""  # why there is no budget ("no history ...")
    lead_s: int | None = None  # the preemption lead time the job needs
    first_checkpoint_s: float | None = None  # from the batch start to the first checkpoint on disk
    end_s: float | None = None  # from the batch start to the end of the run
    warnings: tuple[Advice, ...] = ()

    def line(self) -> str:
        """The dry run's ``#   budget:`` line (without the prefix)."""
        m = self.measured
        if m is None:
            return self.note
        parts = [f"from {m.runs} earlier run(s):", _seconds("start-up", m.startup_s)]
        if m.step_s is not None:
            per_epoch = f" x {m.steps_per_epoch} steps/epoch" if m.steps_per_epoch else ""
            parts.append(f"{m.step_s:.3g} s/step{per_epoch},")
        parts.append(_seconds("checkpoint" + (" at most" if m.save_bound else ""), m.durable_s))
        if self.lead_s is not None:
            parts.append(f"preemption lead {self.lead_s} s (preempt_before {self.planned.preempt_before} s);")
        limit = "--time UNLIMITED" if self.planned.time_s is None else f"--time {format_time(self.planned.time_s)}"
        reach = [f"{what} at ~{_clock(at)}" for what, at in (("first checkpoint", self.first_checkpoint_s),
                                                              ("end", self.end_s)) if at is not None]
        parts.append(", ".join(reach) + f" of {limit}" if reach else f"{limit} (not enough measured to place "
                     "the first checkpoint or the end)")
        return " ".join(p for p in parts if p)

    def as_dict(self) -> dict[str, Any]:
        p = self.planned
        return {"history": self.measured.runs if self.measured else 0, "note": self.note or None,
                "measured": self.measured.as_dict() if self.measured else None, "lead_s": self.lead_s,
                "first_checkpoint_s": _r(self.first_checkpoint_s), "end_s": _r(self.end_s), "time_s": p.time_s,
                "preempt_before": p.preempt_before, "checkpoint_every": p.checkpoint_every,
                "warnings": [w.as_dict() for w in self.warnings]}


def planned_of(cfg: RunConfig, max_time_s: int | None = None) -> Planned:
    """What ``job.json`` plans (a script's params are its own: no epochs, no orch checkpoints)."""
    params = cfg.params
    every = params.get("checkpoint_every", DEFAULT_EVERY)
    epochs = params.get("epochs", 1)
    return Planned(time_s=parse_time(cfg.time) if cfg.time else None, preempt_before=cfg.launcher.preempt_before,
                   epochs=epochs if isinstance(epochs, int) and not isinstance(epochs, bool) else 1,
                   checkpoint=params.get("checkpoint", True) is True and cfg.script is None,
                   checkpoint_every=float(every) if isinstance(every, (int, float)) else DEFAULT_EVERY,
                   max_time_s=max_time_s)


def budget(measured: Measured | None, planned: Planned, *, no_history: str = "no history") -> Budget:
    """The budget of ``planned`` from ``measured`` (None: ``no_history`` says why, and nothing is estimated)."""
    if measured is None:
        return Budget(planned, None, note=no_history)
    m, p = measured, planned
    save = m.save_s if p.checkpoint else None
    durable = m.durable_s if p.checkpoint else None
    lead = _lead(durable, m.step_s)
    epoch_train = m.step_s * m.steps_per_epoch if m.step_s is not None and m.steps_per_epoch else None
    first = end = None
    if epoch_train is not None and m.startup_s is not None:
        evaluation = m.eval_s or 0.0
        if save is not None and durable is not None:
            periodic = p.checkpoint_every > 0 and p.checkpoint_every < epoch_train
            first = m.startup_s + (p.checkpoint_every if periodic else epoch_train + evaluation) + durable
        saves = (1 + _periodic_saves(epoch_train, p.checkpoint_every)) * (save or 0.0)
        end = m.startup_s + p.epochs * (epoch_train + evaluation + saves)
    found = Budget(p, m, lead_s=lead, first_checkpoint_s=first, end_s=end)
    return replace(found, warnings=_warnings(found))


def _lead(durable: float | None, step: float | None) -> int | None:
    if durable is None or step is None:
        return None
    need = durable + step
    return math.ceil(need + max(MIN_MARGIN_S, MARGIN_SHARE * need))


def _periodic_saves(epoch_train: float, every: float) -> int:
    """Periodic saves inside one epoch (the clock restarts at every save; one due at the epoch's end is the
    epoch's own)."""
    return max(0, math.ceil(epoch_train / every) - 1) if every > 0 else 0


def suggested_time(seconds: float, preempt_before: int) -> int:
    """A ``--time`` (seconds) that holds ``seconds`` of work before the preemption signal, with a margin."""
    total = (seconds + preempt_before) * (1 + TIME_MARGIN_SHARE)
    return math.ceil(total / TIME_ROUNDING_S) * TIME_ROUNDING_S


def _warnings(b: Budget) -> tuple[Advice, ...]:
    p, m = b.planned, b.measured
    assert m is not None
    found: list[Advice] = []
    if b.lead_s is not None and m.durable_s is not None and m.step_s is not None and p.checkpoint \
            and p.preempt_before < m.durable_s + m.step_s:
        found.append(Advice(
            f"launcher.preempt_before={p.preempt_before} s is shorter than one checkpoint "
            f"({m.durable_s:.3g} s) plus one step ({m.step_s:.3g} s) measured in {m.runs} earlier run(s): "
            "a preempted run may be killed before its checkpoint is on disk",
            f"set launcher.preempt_before: {b.lead_s} in cluster.yaml"))
    if p.time_s is None:
        return tuple(found)
    window = p.time_s - p.preempt_before  # training stops at the preemption signal
    if b.first_checkpoint_s is not None and b.first_checkpoint_s > window:
        found.append(Advice(
            f"--time {format_time(p.time_s)} cannot reach the first checkpoint: it is due "
            f"~{_clock(b.first_checkpoint_s)} after the start, and training stops {p.preempt_before} s before the "
            "limit",
            _reach_hint(b, b.first_checkpoint_s, window)))
    if b.end_s is not None and b.end_s > window:
        requeue = " (each allocation pays the start-up again)"
        found.append(Advice(
            f"--time {format_time(p.time_s)} cannot reach the end of the run: {p.epochs} epoch(s) take "
            f"~{_clock(b.end_s)} with start-up and checkpoints, and training stops {p.preempt_before} s before "
            "the limit",
            _time_hint(b.end_s, p) + f", or let the run continue over several allocations{requeue}"))
    return tuple(found)


def _reach_hint(b: Budget, needed: float, window: int) -> str:
    p, m = b.planned, b.measured
    assert m is not None
    hint = _time_hint(needed, p)
    room = window - (m.startup_s or 0.0) - (m.durable_s or 0.0)
    every = math.floor(room * EVERY_SHARE)
    if every >= 1:
        hint += f", or checkpoint_every={every} (a checkpoint within the time)"
    return hint


def _time_hint(needed: float, p: Planned) -> str:
    wanted = suggested_time(needed, p.preempt_before)
    if p.max_time_s is not None and wanted > p.max_time_s:
        return f"it needs --time {format_time(wanted)}, more than the partition's max_time {format_time(p.max_time_s)}"
    return f"use --time {format_time(wanted)}"


def _seconds(label: str, value: float | None) -> str:
    return f"{label} {value:.3g} s," if value is not None else ""


def _clock(seconds: float) -> str:
    return format_time(math.ceil(seconds))


def _r(value: float | None, digits: int = 3) -> float | None:
    return round(value, digits) if value is not None else None
