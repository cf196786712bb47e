"""``orch logs -f`` on a remote cluster that survives a dropped connection.

The cluster's ``orch logs -f`` streams through SSH. When the connection drops (ssh exits 255: a
network change, a suspended laptop, a killed control master), the connection is opened again
(retried for :data:`RETRY_FOR` seconds) and ``orch logs -f`` restarts there. Its first lines are
the end of the log again: they are held until the stream pauses, and the lines already printed
(the longest overlap of what was printed last and what came back) are dropped, so the output
goes on where it stopped.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence

from orchestrator.remote.ssh import Connection, RemoteError

RETRY_FOR = 120.0  # seconds to keep trying to reconnect
PAUSE = 1.0  # seconds without a line that end the repeated start of a restarted stream
DROPPED = 255  # ssh's exit code for its own failures


def overlap(printed: Sequence[bytes], again: Sequence[bytes]) -> int:
    """How many of ``again``'s first lines are the last lines of ``printed`` (the longest such run)."""
    before, after = list(printed), list(again)
    for k in range(min(len(before), len(after)), 0, -1):
        if after[:k] == before[len(before) - k:]:
            return k
    return 0


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


def follow(conn: Connection, command: str, stdin: bytes, *, lines: int) -> int:
    """Stream ``command`` (the remote ``orch logs -f``), reconnecting after a dropped connection."""
    printed: deque[bytes] = deque(maxlen=max(lines, 0) + 1)
    out = sys.stdout.buffer
    restarted = False
    conn.open()
    while True:
        proc = subprocess.Popen(conn.argv(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
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
                line = lines_in.get(timeout=PAUSE if held is not None else None)
            except queue.Empty:  # the restarted stream paused: its repeated start is over
                line = b""
            if held is not None and (line == b"" or line is None or len(held) > lines):
                skip = overlap(printed, held)
                for kept in held[skip:]:
                    out.write(kept)
                    printed.append(kept)
                out.flush()
                held = None
                if line == b"":
                    continue
            if line is None:
                break
            if held is not None:
                held.append(line)
                continue
            out.write(line)
            out.flush()
            printed.append(line)
        code = proc.wait()
        if code != DROPPED:
            return code
        print(f"orch: the connection to {conn.dest} dropped; reconnecting", file=sys.stderr, flush=True)
        _reconnect(conn)
        restarted = True
