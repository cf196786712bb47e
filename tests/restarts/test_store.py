"""restarts/store.py: every store call of an agent ends within its bound. A call that answers returns its value,
one that raises raises the same error, one whose host hangs raises TimeoutError (an OSError, read as "the store is
gone") after the bound, and every later call fails at once; :func:`wait_for` waits for keys, bounded."""

from __future__ import annotations

import threading
import time

import pytest
from support import DictStore

from orchestrator.restarts.store import BoundedStore, wait_for


class Store(DictStore):
    """A store whose ``get`` hangs while ``hang`` is set (a host stopped with SIGSTOP)."""

    def __init__(self) -> None:
        super().__init__()
        self.hang = threading.Event()
        self.release = threading.Event()

    def get(self, key: str) -> bytes:
        if self.hang.is_set():
            self.release.wait(30)
        return super().get(key)


def test_calls_that_answer_return_what_the_store_returns() -> None:
    store = BoundedStore(Store(), bound=5)
    store.set("a", "1")
    assert (store.get("a"), store.add("n", 2), store.add("n", 3), store.check(["a", "n"]), store.check(["b"])) == (
        b"1", 2, 5, True, False)


def test_an_error_of_the_store_is_raised_as_it_is() -> None:
    with pytest.raises(KeyError):
        BoundedStore(Store(), bound=5).get("missing")


def test_a_hung_host_ends_the_call_after_the_bound_and_every_later_call_at_once() -> None:
    inner = Store()
    inner.set("a", "1")
    inner.hang.set()
    store = BoundedStore(inner, bound=0.3)
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=r"did not answer within 0\.3 s"):
        store.get("a")
    assert 0.25 < time.monotonic() - start < 5
    assert isinstance(TimeoutError(), OSError)  # the agents read OSError as "the store is gone"
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="before"):
        store.set("b", "2")  # the stuck call still holds the connection: no new call is tried
    assert time.monotonic() - start < 0.1 and "b" not in inner.data
    inner.release.set()


def test_waiting_for_keys_ends_when_they_are_there_or_after_the_time() -> None:
    store = Store()
    threading.Timer(0.1, store.set, args=("late", "1")).start()
    assert wait_for(store, ["late"], 5, 0.01)
    start = time.monotonic()
    assert not wait_for(store, ["late", "never"], 0.2, 0.01)
    assert 0.15 < time.monotonic() - start < 5
