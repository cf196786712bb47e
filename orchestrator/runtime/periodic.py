"""When a periodic checkpoint is due (``TrainParams.checkpoint_every``): rank 0's clock, nobody else's.

Only rank 0 asks :meth:`PeriodicClock.due`; its answer reaches every rank through the stop vote
(``dist.StopVote``), so all ranks checkpoint at the same optimizer step. A per-rank clock would let
ranks disagree by one step and enter different collectives. Every checkpoint (periodic, end of epoch,
preemption) restarts the clock, so at most ``every`` seconds of training (plus the one step the
asynchronous vote lags) are lost when a run dies. No torch here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class PeriodicClock:
    every: float  # seconds between checkpoints; 0: never due
    clock: Callable[[], float] = time.monotonic
    _last: float = field(init=False)

    def __post_init__(self) -> None:
        self._last = self.clock()

    def due(self) -> bool:
        return self.every > 0 and self.clock() - self._last >= self.every

    def reset(self) -> None:
        self._last = self.clock()
