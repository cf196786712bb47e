"""Learning-rate schedules as pure functions of the optimizer step (no state to checkpoint).

``lr_factor(step)`` multiplies each parameter group's base lr before optimizer step ``step`` (0-based,
counted over the whole run): a linear warm-up over ``warmup`` steps, then constant, cosine (down to
``lr_min``) or step decay (``gamma`` every ``step_every`` optimizer steps). A resumed run computes the
same factor for the same step, so the schedule needs no saved state and stays bit-exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Schedule:
    kind: str  # constant | cosine | step
    total: int  # optimizer steps of the whole run
    warmup: int = 0
    step_every: int = 1  # optimizer steps per decay (step)
    gamma: float = 0.1
    floor: float = 0.0  # lr_min / lr (cosine)

    def factor(self, step: int) -> float:
        if step < self.warmup:
            return (step + 1) / self.warmup
        if self.kind == "cosine":
            span = max(1, self.total - self.warmup)
            progress = min(1.0, (step - self.warmup) / span)
            return self.floor + (1.0 - self.floor) * 0.5 * (1.0 + math.cos(math.pi * progress))
        if self.kind == "step":
            return float(self.gamma ** ((step - self.warmup) // max(1, self.step_every)))
        return 1.0

    @property
    def constant(self) -> bool:
        return self.kind == "constant" and self.warmup == 0


def make_schedule(kind: str, *, epochs: int, steps_per_epoch: int, warmup: int, step_epochs: int, gamma: float,
                  lr: float, lr_min: float) -> Schedule:
    """The schedule of a run of ``epochs`` x ``steps_per_epoch`` optimizer steps."""
    return Schedule(kind=kind, total=epochs * steps_per_epoch, warmup=warmup,
                    step_every=step_epochs * steps_per_epoch, gamma=gamma, floor=min(1.0, lr_min / lr))


