"""A rank's output a line at a time: each line one ``write`` to the descriptor, and still live.

Under ``python -u`` (unbuffered) ``print("a", "b")`` reaches the descriptor as one write per part and one
for the newline; two processes sharing the descriptor (a per-node script's ``mp.spawn`` processes, which
inherit the rank's stdout and stderr) cut each other's lines between those writes. So the task process
runs without ``-u`` and, first thing, :func:`line_buffered` makes its ``sys.stdout`` and ``sys.stderr`` flush
at every line end (``\\n``, and ``\\r`` for a progress bar), and C's ``stdout`` line-buffered (Linux: what C
code prints, NCCL's lines). :func:`pass_to_spawned` does the same in every fresh interpreter
``multiprocessing`` starts (spawn, forkserver: they do not inherit the rank's streams): their preparation
data carries :data:`SETUP`, run as it is unpickled, before the script's main module is imported in them.
Forked processes (``fork``, a DataLoader's workers, an in-process restart's worker) inherit the streams.

A line up to the pipe's atomic size (``PIPE_BUF``, 4096 bytes on Linux) is one write no other writer's can cut.
A longer line may reach the descriptor in parts (and a line over 8192 bytes, Python's buffer, always does),
and another process's line can land between them. Output without a newline (``print(..., end="")``) waits for
the line's end or a flush, as in a terminal-less ``python`` without ``-u``.

:func:`fresh_line`: orch's own lines in the rank's log (its errors) start on a line of their own, also when
the script's last line there has no end yet.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import sys
from typing import Any, TextIO

# What each process runs first: self-contained, because in a spawned interpreter it runs before the parent's
# sys.path is set (orch need not be importable there yet). _IOLBF is 1 on glibc and musl.
SETUP = """
import sys
for stream in (sys.stdout, sys.stderr):
    try:
        stream.reconfigure(line_buffering=True, write_through=False)
    except Exception:
        pass
if sys.platform.startswith("linux"):
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        libc.setvbuf(ctypes.c_void_p.in_dll(libc, "stdout"), None, 1, 0)
    except Exception:
        pass
"""
SETUP_KEY = "orch_line_buffering"  # its entry in multiprocessing's preparation data (prepare() ignores it)
PATCHED = "__orch_line_buffering__"


def start() -> None:
    """The task process's first step (``orchestrator.runtime.launch``): line buffering here and in what it spawns."""
    line_buffered()
    pass_to_spawned()


def line_buffered() -> None:
    """This process's ``sys.stdout``/``sys.stderr`` (and C's stdout) flush at every line end."""
    exec(SETUP, {})


class _RunSetup:
    """Unpickled in a spawned process as ``exec(SETUP, {})``: line buffering, before anything else runs there."""

    def __reduce__(self) -> tuple[Any, tuple[str, dict[str, Any]]]:
        return exec, (SETUP, {})


def pass_to_spawned() -> None:
    """Every process ``multiprocessing`` spawns from here on (spawn and forkserver start methods, also through
    ``torch.multiprocessing``) runs :data:`SETUP` first: its preparation data carries it."""
    from multiprocessing import spawn

    original = spawn.get_preparation_data
    if getattr(original, PATCHED, False):
        return

    @functools.wraps(original)
    def get_preparation_data(name: str) -> dict[str, Any]:
        data: dict[str, Any] = original(name)
        return {SETUP_KEY: _RunSetup(), **data}  # first: unpickled before the entries prepare() acts on

    setattr(get_preparation_data, PATCHED, True)
    spawn.get_preparation_data = get_preparation_data


def ends_with_newline(fd: int) -> bool | None:
    """Whether the regular file open at ``fd`` is empty or ends in a newline (None: not a regular file, or
    not readable: a pipe, a terminal). A log is open for writing only (``O_APPEND``): read through
    ``/proc/self/fd`` (Linux), else at ``fd`` itself."""
    try:
        info = os.fstat(fd)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    if info.st_size == 0:
        return True
    for path in (f"/proc/self/fd/{fd}", None):
        try:
            reader = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)) if path else fd
        except OSError:
            continue
        try:
            return os.pread(reader, 1, os.fstat(reader).st_size - 1) == b"\n"
        except OSError:
            continue
        finally:
            if reader != fd:
                os.close(reader)
    return None


def end_line(fd: int) -> None:
    """A log orch copies a rank's output into ends in a newline: one is written when its last line has none
    (a rank cut off mid-line), so what is appended next starts on a line of its own."""
    if ends_with_newline(fd) is False:
        os.write(fd, b"\n")


def fresh_line(stream: TextIO | None = None) -> None:
    """Before orch writes a line of its own to ``stream`` (default ``sys.stderr``): what the script left in
    the buffers goes out first, and when the log (a regular file) does not end in a newline, one is written."""
    stream = stream or sys.stderr
    for each in (sys.stdout, stream):
        with contextlib.suppress(Exception):  # a script may have closed or replaced them
            each.flush()
    with contextlib.suppress(Exception):
        if ends_with_newline(stream.fileno()) is False:
            stream.write("\n")
            stream.flush()
