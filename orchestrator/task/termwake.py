"""A SIGTERM that the kernel hands to another thread still reaches the main thread at once.

A signal sent to a process goes to any of its threads that does not block it (a rank has torch's and gloo's
threads). Python's C-level handler, in that thread, only notes it: the Python handler (the outcome record of
:func:`orchestrator.task.launch.install_term_record`) runs when the main thread next runs Python code. A main
thread asleep in a system call (``time.sleep``, a read, or a rank frozen by SIGSTOP and woken by the SIGCONT
that comes with the SIGTERM, when another thread took the signal) slept on until orch run's or Slurm's SIGKILL,
and the rank's record kept saying ``running``.

Python writes the number of every signal it notes to its wakeup fd, from whichever thread took it. A daemon
thread reads it; when the handler has not started soon after, it sends the signal to the main thread itself
(``pthread_kill``): the call there ends with EINTR and Python runs the handler. faulthandler's dump is taken
off that signal first (the first delivery already dumped every thread's stack). A process forked from this
one (a DataLoader worker) starts without the wakeup fd, so its own SIGTERM never reaches this process. A wakeup fd
someone else set (asyncio's) is left in place: then only the first delivery counts, as without this module.
No torch here.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

WAIT_SECONDS = 0.2  # how long the main thread has to start the handler itself before it is woken

_started = [threading.Event()]  # the handler began (set by :func:`first`); a new one in a forked child
_fds: list[int] = []  # this process's pipe (read end, write end) while installed
_fork_hook: list[bool] = []


Handler = Callable[[int, FrameType | None], Any]


def install(signum: int, handler: Handler, wait: float = WAIT_SECONDS) -> bool:
    """Watch for ``signum`` noted in another thread and pass it on to the main thread while ``handler`` (which
    calls :func:`first`) is its handler; whether it is watched. From the main thread, after the handler is set."""
    if _fds or threading.current_thread() is not threading.main_thread():
        return bool(_fds)
    try:
        read_fd, write_fd = os.pipe()
    except OSError:
        return False
    os.set_blocking(write_fd, False)  # the C-level handler must never block on a full pipe
    try:
        previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    except (OSError, ValueError):
        previous = None
    if previous != -1:  # someone else's wakeup fd (or none could be set): theirs stays
        if previous is not None:
            signal.set_wakeup_fd(previous)
        for fd in (read_fd, write_fd):
            os.close(fd)
        return False
    _fds[:] = [read_fd, write_fd]
    if not _fork_hook:
        os.register_at_fork(before=_unset, after_in_parent=_reset, after_in_child=_forget)
        _fork_hook.append(True)
    main = threading.main_thread().ident
    assert main is not None
    threading.Thread(target=_watch, args=(read_fd, signum, handler, main, wait), name="orch-termwake",
                     daemon=True).start()
    return True


def first() -> bool:
    """The handler calls this first: False when it already began (the main thread woken while running it)."""
    if _started[0].is_set():
        return False
    _started[0].set()
    return True


def _watch(read_fd: int, signum: int, handler: Handler, main: int, wait: float) -> None:
    while True:
        try:
            noted = os.read(read_fd, 512)
        except OSError:
            return
        if not noted:
            return
        # another handler now (a script's own, or the one holding signals while a record is written): not ours
        if signum in noted and not _started[0].wait(wait) and signal.getsignal(signum) is handler:
            faulthandler.unregister(signum)  # its stacks are in the log already: one dump, not two
            with contextlib.suppress(OSError, ValueError):
                signal.pthread_kill(main, signum)
            return  # once: a main thread in a call that EINTR does not end (a C++ wait) is not woken again and again


def _unset() -> None:
    """Before a fork: no wakeup fd, so that the child never starts with this process's (a SIGTERM it took
    before :func:`_forget` ran would wake this process's main thread)."""
    if _fds:
        with contextlib.suppress(OSError, ValueError):  # (a fork from another thread: the window stays open)
            signal.set_wakeup_fd(-1)


def _reset() -> None:
    if _fds:
        with contextlib.suppress(OSError, ValueError):
            signal.set_wakeup_fd(_fds[1], warn_on_full_buffer=False)


def _forget() -> None:
    """In a forked child: its signals are its own (the watcher thread did not come along)."""
    if not _fds:
        return
    with contextlib.suppress(OSError, ValueError):
        signal.set_wakeup_fd(-1)
    for fd in _fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    _fds.clear()
    _started[0] = threading.Event()  # (the watcher may have held the old one's lock at the fork)
