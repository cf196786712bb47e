"""The agents' store, as the agents use it (``restarts/agent.py``): every call ends within a bound.

torch's TCPStore client waits with no bound on a host that hangs (rank 0's agent stopped with SIGSTOP):
``get`` and ``check`` block for good, even after ``set_timeout``. An agent must not: it would never fall back
to the step-level restart, nor leave its exit barrier. :class:`BoundedStore` runs each call on a short-lived
thread and gives up after ``bound`` seconds with :class:`TimeoutError` (an ``OSError``, which the agents read as
"the store is gone"); from then on every call fails at once (the stuck call still holds the connection).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

CALL_BOUND_S = 10.0  # how long one store call of an agent may take

T = TypeVar("T")


class AgentStore(Protocol):
    """The part of a c10d store the agents use (torch's TCPStore has it)."""

    def set(self, key: str, value: str) -> None: ...
    def get(self, key: str) -> bytes: ...
    def add(self, key: str, amount: int) -> int: ...
    def check(self, keys: list[str]) -> bool: ...
    def multi_get(self, keys: list[str]) -> list[bytes]: ...


class BoundedStore:
    """``store`` whose every call returns, raises, or raises :class:`TimeoutError` within ``bound`` seconds."""

    def __init__(self, store: AgentStore, bound: float = CALL_BOUND_S) -> None:
        self.inner, self.bound = store, bound
        self.lost = False

    def set(self, key: str, value: str) -> None:
        self._call(lambda: self.inner.set(key, value))

    def get(self, key: str) -> bytes:
        return self._call(lambda: self.inner.get(key))

    def add(self, key: str, amount: int) -> int:
        return self._call(lambda: self.inner.add(key, amount))

    def check(self, keys: list[str]) -> bool:
        return self._call(lambda: self.inner.check(keys))

    def multi_get(self, keys: list[str]) -> list[bytes]:
        """Every key's value in one round trip (the keys must be there: a missing one waits)."""
        return self._call(lambda: self.inner.multi_get(keys))

    def _call(self, call: Callable[[], T]) -> T:
        if self.lost:
            raise TimeoutError(f"the agents' store did not answer within {self.bound:g} s before")
        done: list[tuple[bool, object]] = []

        def run() -> None:
            try:
                done.append((True, call()))
            except BaseException as exc:  # handed to the caller as it is
                done.append((False, exc))

        thread = threading.Thread(target=run, name="orch-agent-store", daemon=True)
        thread.start()
        thread.join(self.bound)
        if not done:
            self.lost = True
            raise TimeoutError(f"the agents' store did not answer within {self.bound:g} s (its host hangs?)")
        ok, value = done[0]
        if not ok:
            assert isinstance(value, BaseException)
            raise value
        return value  # type: ignore[return-value]


def wait_for(store: AgentStore, keys: list[str], seconds: float, poll: float) -> bool:
    """Whether every one of ``keys`` is in ``store`` within ``seconds`` (looked at every ``poll`` seconds)."""
    deadline = time.monotonic() + seconds
    while not store.check(keys):
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)
    return True
