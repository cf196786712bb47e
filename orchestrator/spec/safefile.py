"""The one reader of the files in a job folder that orch did not just write itself (``job_id``,
``result.json``, ``progress.json``, ``metrics.jsonl``, outcome records, preflight records, logs).

Anyone who can write the folder, or a crash, can leave something else under the expected name: a FIFO
(a plain ``open`` blocks for ever), a character device such as ``/dev/zero`` (never ends), a folder, a
file of gigabytes, or JSON of another shape. Here a file is opened with ``O_NONBLOCK`` (a FIFO with no
writer opens at once), ``fstat``-checked to be a regular file, and read up to a size cap; JSON is
checked to be of the expected type. Whatever else is found becomes a warning naming the file (``orch:
warning: <path> is a FIFO, not a file; ignored``), and the reader returns None: never a hang, never a
traceback.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

log = logging.getLogger(__name__)

RECORD_LIMIT = 16 * 1024 * 1024  # a record file (JSON, job_id, metrics.jsonl) is never larger than this

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
T = TypeVar("T")


class NotAFile(OSError):
    """The path names something other than a regular file (a FIFO, a device, a folder)."""


def kind_of(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def note(path: Path, problem: str) -> None:
    """Tell the user once, on stderr, that ``path`` was ignored and why."""
    log.warning("%s %s; ignored", path, problem)


@contextmanager
def open_regular(path: Path) -> Iterator[IO[bytes]]:
    """``path`` opened for reading (binary, blocking reads) if it is a regular file; ``NotAFile``
    otherwise, ``FileNotFoundError`` when missing. Opening never blocks (O_NONBLOCK)."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotAFile(0, f"is {kind_of(mode)}, not a file", str(path))
        os.set_blocking(fd, True)
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        yield fh


def read_bytes(path: Path, limit: int = RECORD_LIMIT, *, quiet_missing: bool = True) -> bytes | None:
    """The bytes of regular file ``path`` (at most ``limit``), or None with a warning naming what is
    wrong (missing: None, quietly unless ``quiet_missing`` is False). Larger files: None and a warning."""
    try:
        with open_regular(path) as fh:
            data = fh.read(limit + 1)
    except FileNotFoundError:
        if not quiet_missing:
            note(path, "is missing")
        return None
    except NotAFile as exc:
        note(path, exc.strerror or "is not a file")
        return None
    except OSError as exc:
        note(path, f"cannot be read ({exc.strerror or type(exc).__name__})")
        return None
    if len(data) > limit:
        note(path, f"is larger than {limit:,} bytes, more than such a record can be")
        return None
    return data


def read_text(path: Path, limit: int = RECORD_LIMIT) -> str | None:
    """:func:`read_bytes` decoded as UTF-8 (undecodable bytes replaced)."""
    data = read_bytes(path, limit)
    return None if data is None else data.decode("utf-8", errors="replace")


def read_json(path: Path, kind: type[T], limit: int = RECORD_LIMIT) -> T | None:
    """The JSON value of ``path`` when it is of type ``kind`` (dict, list, ...); else None with a warning."""
    text = read_text(path, limit)
    if text is None:
        return None
    return parse_json(text, kind, path)


def parse_json(text: str, kind: type[T], where: Path | str) -> T | None:
    try:
        data: Any = json.loads(text)
    except (ValueError, RecursionError):
        note(Path(where), "is not JSON")
        return None
    if not isinstance(data, kind):
        note(Path(where), f"holds {_json_type(data)}, not {_json_type(kind())}")
        return None
    return data


def _json_type(value: object) -> str:
    names = {dict: "a JSON object", list: "a JSON list", str: "a JSON string", bool: "true/false",
             int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def is_regular(path: Path) -> bool:
    """Whether ``path`` is a regular file (lstat, no open: a FIFO is never opened)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
