"""Reading job folders again and again without reading what did not change (``orch top``).

A file's :class:`Stamp` (inode, size, modification time in ns) comes from one ``stat``; :class:`Memo` keeps
what a reader made of some files while none of their stamps changes, so a refresh re-reads only the files
that changed; :class:`JsonlTail` reads an append-only ``.jsonl`` file (``metrics.jsonl``, ``steps.jsonl``)
from the offset where the last read stopped, and again from the start when the file was replaced or
shrank (a resume trims it atomically: another inode). Whole lines only: a line still being written is
read once it ends. Reads go through :mod:`orchestrator.spec.safefile` (regular files only, bounded).

Each class counts what it actually read (``reads``), so a caller (and its tests) can tell a refresh that
read one file from one that read a thousand.
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

from orchestrator.spec.safefile import open_regular

T = TypeVar("T")

FIRST_READ_BYTES = 4 * 1024 * 1024  # a tail's first read starts at most this far from the end (a sparkline's worth)


class Stamp(NamedTuple):
    """What one ``stat`` says of a file: another value means the file may have changed."""

    ino: int
    size: int
    mtime_ns: int


def stamp(path: Path | str) -> Stamp | None:
    """The file's stamp; None when it is missing or cannot be looked at."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return Stamp(st.st_ino, st.st_size, st.st_mtime_ns)


def stamps(paths: Sequence[Path]) -> tuple[Stamp | None, ...]:
    return tuple(stamp(p) for p in paths)


class Memo(Generic[T]):
    """What ``read`` made of some files, by key, kept until one of the files' stamps changes.

    A file that changes between the ``stat`` and the read is read again at the next call (its stamp then
    differs from the one kept): a value is never older than the stamps it is kept under."""

    def __init__(self) -> None:
        self._kept: dict[Hashable, tuple[Hashable, T]] = {}
        self.reads = 0  # calls of a reader: what a refresh really read

    def get(self, key: Hashable, paths: Sequence[Path], read: Callable[[], T], *, extra: Hashable = None) -> T:
        """``read()``'s value for ``key``; read again only when a stamp of ``paths`` (or ``extra``) changed."""
        token = (stamps(paths), extra)
        kept = self._kept.get(key)
        if kept is not None and kept[0] == token:
            return kept[1]
        value = read()
        self.reads += 1
        self._kept[key] = (token, value)
        return value

    def forget(self, keep: Callable[[Hashable], bool]) -> None:
        """Drop the values whose key ``keep`` refuses (folders no longer shown)."""
        self._kept = {k: v for k, v in self._kept.items() if keep(k)}


class JsonlTail:
    """The last ``keep`` JSON objects of an append-only ``.jsonl`` file, read incrementally."""

    def __init__(self, path: Path, keep: int = 64) -> None:
        self.path = path
        self.records: deque[dict[str, Any]] = deque(maxlen=keep)
        self.offset = 0  # bytes read so far (whole lines)
        self.ino: int | None = None
        self.mtime_ns = 0  # the file's when it was read last
        self.reads = 0  # times the file was opened and read
        self.skipped = 0  # damaged lines (torn, not JSON, not an object)

    def poll(self) -> bool:
        """Read what was appended since the last call; True when the records changed."""
        found = stamp(self.path)
        if found is None:
            changed = bool(self.records)
            self._reset(None)
            return changed
        rewritten = found.size == self.offset and found.mtime_ns != self.mtime_ns  # in place, to the same size
        if found.ino != self.ino or found.size < self.offset or rewritten:  # replaced (a resume trims it), truncated
            self._reset(found.ino)
        if found.size == self.offset:
            return False
        start = self.offset
        if self.offset == 0 and found.size > FIRST_READ_BYTES:
            start = found.size - FIRST_READ_BYTES  # a long run's file: its end is what a view shows
        try:
            with open_regular(self.path) as fh:
                fh.seek(start)
                data = fh.read(found.size - start)
        except OSError:
            return False
        self.reads += 1
        self.mtime_ns = found.mtime_ns
        end = data.rfind(b"\n")
        if end < 0:
            return False  # no whole line yet
        lines = data[: end + 1].splitlines()
        if start != self.offset and lines:
            lines = lines[1:]  # the first line of a read from the middle is a part
        self.offset = start + end + 1
        before = len(self.records)
        for line in lines:
            record = _object(line)
            if record is None:
                self.skipped += bool(line.strip())
                continue
            self.records.append(record)
        return len(self.records) != before or bool(lines)

    def _reset(self, ino: int | None) -> None:
        self.records.clear()
        self.offset = 0
        self.ino = ino


def _object(line: bytes) -> dict[str, Any] | None:
    line = line.strip()
    if not line.startswith(b"{"):
        return None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None
