"""Is anyone still reading our output? A follower (``orch logs -f``) stops when its reader is gone.

``orch logs -f`` run through SSH without a tty (the cluster's side of a remote ``orch logs -f``) gets
no SIGHUP when the SSH session ends: sshd only closes its end of the follower's stdout. A write then
fails (EPIPE), but a quiet log writes nothing, so the follower would go on until the job ends. Instead
of sleeping between reads, the follow loops wait in ``poll()`` on their stdout with no event asked
for: the kernel still reports POLLERR (a pipe whose read end is closed) and POLLHUP (a socket whose
peer closed, a terminal hung up), and wakes the wait the moment that happens. A regular file or
``/dev/null`` reports neither, so a follower writing to a file just sleeps, as before.

The same check serves the laptop's side (``orch logs -f JOB | head``: the SSH stream ends when ``head``
exits) and a local ``orch logs -f`` into a pipe whose reader quit.
"""

from __future__ import annotations

import select
import time
from typing import IO

_POLL = hasattr(select, "poll")  # not on every platform: there a follower only sleeps
_GONE = (select.POLLERR | select.POLLHUP) if _POLL else 0


def _fileno(stream: IO[bytes] | IO[str] | int) -> int | None:
    if isinstance(stream, int):
        return stream
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # a BytesIO, a closed or detached stream: nothing to watch
        return None


def wait(stream: IO[bytes] | IO[str] | int, seconds: float) -> bool:
    """Wait ``seconds``, or less when the reader of ``stream`` goes away: True when it is gone (then at
    once); False after the full wait. A stream without a descriptor (a BytesIO) is a plain sleep."""
    fd = _fileno(stream) if _POLL else None
    if fd is None:
        time.sleep(seconds)
        return False
    poller = select.poll()
    poller.register(fd, 0)  # no event asked: only POLLERR / POLLHUP / POLLNVAL come back
    start = time.monotonic()
    events = poller.poll(max(seconds, 0.0) * 1000.0)
    flags = events[0][1] if events else 0
    if flags & _GONE:
        return True
    if flags:  # POLLNVAL: a closed descriptor (the next write says what is wrong), or one this system's
        # poll() cannot watch (macOS: a terminal); a plain sleep then
        time.sleep(max(0.0, seconds - (time.monotonic() - start)))
    return False


def gone(stream: IO[bytes] | IO[str] | int) -> bool:
    """Has the reader of ``stream`` gone away (now, without waiting)?"""
    return _fileno(stream) is not None and wait(stream, 0.0)


def reader_gone_error() -> BrokenPipeError:
    """What a follow loop raises when its reader is gone: the error a failed write would have raised
    (orch's main ends quietly on it)."""
    import errno

    return BrokenPipeError(errno.EPIPE, "the reader of the output is gone")
