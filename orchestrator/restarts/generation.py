"""A forked worker's generation (torch-free): the :class:`Worker` handle its agent hands it, and :func:`begin`.

The agent (``restarts/agent.py``) makes a :class:`Worker` in the process it forks and hands it to the worker's
body (the runtime's: ``restarts/worker.py`` trains generation by generation through it); a survivor goes on in
the next generation with :meth:`Worker.restart`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from orchestrator.env import distenv
from orchestrator.records.startup import CLOCK
from orchestrator.restarts.heartbeat import Heartbeat
from orchestrator.task.preempt import PreemptFlag


@dataclass
class Worker:
    """This process is rank ``rank``'s worker, in generation ``generation`` (made by its agent at the fork)."""

    rank: int
    generation: int
    base_attempt: int  # ORCH_ATTEMPT of the step (generation 0)
    store_addr: str
    store_port: int
    wait_s: float  # how long a survivor waits for the failed rank's decision
    flag: PreemptFlag  # the worker's preemption flag (installed at the fork)
    beat: Heartbeat  # its training steps tick it; its agent watches it (made before the fork)
    on_restart: Callable[[int], None] = field(repr=False, default=lambda g: None)

    def restart(self, generation: int, announce: Callable[[int], None] = lambda g: None) -> None:
        """A survivor goes on in generation ``generation``: it says so first (``announce``: the store's
        :func:`~orchestrator.restarts.protocol.at`), so that a death inside the restart is charged to
        ``generation``; then a new attempt for its records and clock."""
        announce(generation)
        self.generation = generation
        begin(self.base_attempt, generation, self.on_restart)


def begin(base: int, generation: int, on_start: Callable[[int], None]) -> None:
    """A worker starts generation ``generation``: ORCH_ATTEMPT, the start-up clock (from now: nothing is left
    to import) and the rank's outcome record (``on_start``) of the new attempt."""
    os.environ[distenv.ATTEMPT_VAR] = str(base + generation)
    if generation:
        CLOCK.restart()
    on_start(generation)
