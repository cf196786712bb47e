"""``orch logs -f`` on a remote cluster that survives a dropped connection.

The cluster's ``orch logs -f`` streams through SSH. When the connection drops (ssh exits 255: a
network change, a suspended laptop, a killed control master), the connection is opened again
(retried for :data:`RETRY_FOR` seconds) and ``orch logs -f`` restarts there. Its first lines are
the end of the log again: they are held until the stream pauses, and the lines already printed
(the longest overlap of what was printed last and what came back) are dropped, so the output
goes on where it stopped. A repeat that pauses before it reaches the last line printed (a busy cluster)
is held on until it does, or until a line that was never printed comes.

The cluster's ``orch logs -f`` ends by itself when its SSH session goes away (it watches its stdout:
:mod:`orchestrator.records.logs.outwatch`), so this side only has to make sure its session does go away
when it stops: the ssh client is ended on every way out (the job ended, an error, Ctrl-C, SIGTERM or
SIGHUP to this orch alone, a reader of this orch's output that quit), and the master then closes
the session's channel on the cluster.

A connection that drops silently (a suspended laptop, a changed network: nothing reaches the cluster)
leaves sshd there unaware for a while, and the follower it runs with it. So every start of the remote
``orch logs -f`` carries one id of this ``orch logs -f`` (:data:`ID_VAR` in its environment), and a
restart first ends the processes that carry it (``/proc/PID/environ``; Linux, the user's own): the
follower of the dropped connection never outlives the one that takes over.
"""

from __future__ import annotations

import contextlib
import queue
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import BinaryIO

from orchestrator.records.logs import outwatch
from orchestrator.remote.ssh import Connection, RemoteError

RETRY_FOR = 120.0  # seconds to keep trying to reconnect
PAUSE = 1.0  # seconds without a line that end the repeated start of a restarted stream
DROPPED = 255  # ssh's exit code for its own failures
ID_VAR = "ORCH_FOLLOW_ID"  # the id of one laptop orch logs -f, in its remote followers' environment
WATCH_EVERY = 1.0  # seconds between checks that this orch's output is still read, while the stream is quiet


def overlap(printed: Sequence[bytes], again: Sequence[bytes]) -> int:
    """How many of ``again``'s first lines are the last lines of ``printed`` (the longest such run)."""
    before, after = list(printed), list(again)
    for k in range(min(len(before), len(after)), 0, -1):
        if after[:k] == before[len(before) - k:]:
            return k
    return 0


def already_printed(printed: Sequence[bytes], again: Sequence[bytes], *, ended: bool) -> int | None:
    """How many of ``again``'s first lines (a restarted stream's, held) were printed already: their overlap with
    the end of ``printed``; None while all of ``again`` is a run of the printed lines short of the last one (the
    repeat goes on: hold on), but where the stream ``ended`` there (all of it was printed)."""
    found = overlap(printed, again)
    if found or not again:
        return found
    before, after = list(printed), list(again)
    inside = any(before[start:start + len(after)] == after for start in range(len(before) - len(after) + 1))
    if not inside:
        return 0
    return len(after) if ended else None


def _reader(stream: object, out: queue.Queue[bytes | None]) -> None:
    for line in iter(stream.readline, b""):  # type: ignore[attr-defined]
        out.put(line)
    out.put(None)


def _reconnect(conn: Connection) -> None:
    deadline = time.monotonic() + RETRY_FOR
    while True:
        conn._open = False
        try:
            conn.open(check=True)
            return
        except RemoteError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(2.0)


def _exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def _signals_end_the_stream() -> Iterator[None]:
    """SIGTERM and SIGHUP (left at their default) end this orch through its ``finally`` blocks, so the
    ssh client is ended with it (by default it would outlive this orch and keep the session open)."""
    changed: list[signal.Signals] = []
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) == signal.SIG_DFL:  # an ignored SIGHUP (nohup) stays ignored
                signal.signal(sig, _exit)
                changed.append(sig)
    try:
        yield
    finally:
        for sig in changed:
            signal.signal(sig, signal.SIG_DFL)


def _end(proc: subprocess.Popen[bytes]) -> None:
    """The ssh client ended (its channel on the cluster closes, and the cluster's orch with it)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def follow(conn: Connection, command: str, stdin: bytes, *, lines: int) -> int:
    """Stream ``command`` (the remote ``orch logs -f``), reconnecting after a dropped connection."""
    with _signals_end_the_stream():
        return _follow(conn, command, stdin, lines=lines)


def _follow(conn: Connection, command: str, stdin: bytes, *, lines: int) -> int:
    printed: deque[bytes] = deque(maxlen=max(lines, 0) + 1)
    out = sys.stdout.buffer
    restarted = False
    ident = secrets.token_hex(8)
    # checked, not trusted: a killed master leaves its socket, and ssh would print its refusal on the
    # user's terminal and stream over a connection of its own (the stream's stderr is not ours to filter)
    conn.open(check=True)
    while True:
        line = remote_line(command, ident, restarted=restarted)
        proc = subprocess.Popen(conn.argv(line), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            code = _stream(proc, stdin, out, printed, lines, restarted)
        finally:
            _end(proc)
        if code != DROPPED:
            return code
        print(f"orch: the connection to {conn.dest} dropped; reconnecting", file=sys.stderr, flush=True)
        _reconnect(conn)
        restarted = True


def remote_line(command: str, ident: str, *, restarted: bool) -> str:
    """``command`` with :data:`ID_VAR` set to ``ident``; after a restart it first ends the followers of
    the earlier connections (those whose environment holds the id: never another command's)."""
    mark = f"{ID_VAR}={ident}"
    handover = (f"kill $(grep -ls {mark} /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3) 2>/dev/null; "
                if restarted else "")
    return f"{handover}export {mark}; {command}"


def _stream(proc: subprocess.Popen[bytes], stdin: bytes, out: BinaryIO, printed: deque[bytes], lines: int,
            restarted: bool) -> int:
    """Copy one ssh's output to ``out`` (after a restart: without the lines printed already); its exit code."""
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(stdin)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    lines_in: queue.Queue[bytes | None] = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines_in), daemon=True).start()
    held: list[bytes] | None = [] if restarted else None
    while True:
        try:
            line = lines_in.get(timeout=PAUSE if held is not None else WATCH_EVERY)
        except queue.Empty:
            if held is None:  # a quiet stream: is this orch's output still read?
                if outwatch.gone(out):
                    raise outwatch.reader_gone_error() from None
                continue
            line = b""  # the restarted stream paused: its repeated start is over
        if held is not None and (line == b"" or line is None or len(held) > lines):
            skip = already_printed(printed, held, ended=line is None)
            if skip is None and line == b"":
                continue  # a pause in the middle of the repeat: what follows it may still be printed already
            for kept in held[skip or 0:]:
                out.write(kept)
                printed.append(kept)
            out.flush()
            held = None
            if line == b"":
                continue
        if line is None:
            return proc.wait()
        if held is not None:
            held.append(line)
            continue
        out.write(line)
        out.flush()
        printed.append(line)
