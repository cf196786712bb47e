"""The preemption signal: a handler that only sets a flag (no torch here).

``launch`` installs it before importing torch, so a signal that arrives during start-up is not
lost (USR1/USR2 would otherwise terminate the process). The training loop reads the flag at
each step boundary; ``dist.StopVote`` makes every rank agree on the step at which to stop.
"""

from __future__ import annotations

import signal
import time
from types import FrameType
from typing import Any

SIGNALS: dict[str, signal.Signals] = {
    "USR1": signal.SIGUSR1,
    "USR2": signal.SIGUSR2,
    "TERM": signal.SIGTERM,
    "INT": signal.SIGINT,
    "HUP": signal.SIGHUP,
    "URG": signal.SIGURG,
}


_INSTALLED: list[PreemptFlag] = []  # the flag whose handler is in place (the task's, from launch)


def installed() -> PreemptFlag | None:
    """The flag whose handler is in place in this process, if any: a script's integration reads the one
    the task installed before the script started, so a signal that came during start-up is not lost."""
    return _INSTALLED[-1] if _INSTALLED else None


class PreemptFlag:
    """Set when the preemption signal arrives; nothing else happens in the handler."""

    def __init__(self, signal_name: str = "USR2") -> None:
        if signal_name not in SIGNALS:
            raise ValueError(f"unknown preemption signal {signal_name!r}; use one of {', '.join(SIGNALS)}")
        self.signal_name = signal_name
        self.signum = SIGNALS[signal_name]
        self.received_at: float | None = None
        self._previous: Any = None
        self._installed = False

    @property
    def requested(self) -> bool:
        return self.received_at is not None

    def request(self) -> None:
        """Set the flag as the handler does (also used by tests and by code that wants to stop)."""
        if self.received_at is None:
            self.received_at = time.monotonic()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.request()

    def install(self) -> PreemptFlag:
        if not self._installed:
            self._previous = signal.signal(self.signum, self._handle)
            self._installed = True
            _INSTALLED.append(self)
        return self

    def restore(self) -> None:
        if self._installed:
            signal.signal(self.signum, self._previous)
            self._installed = False
            if self in _INSTALLED:
                _INSTALLED.remove(self)
