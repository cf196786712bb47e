"""Files written whole or not at all: the one atomic-write helper (torch-free), for every file orch
rewrites in place (``job.json``, outcome records, ``metrics.jsonl``, ``result.json``,
``progress.json``, the checkpoint sidecars, the cache).

A temporary file beside the target (same folder, so the rename cannot cross file systems), created
with exactly ``mode`` (default 0o600: yours only, whatever the umask) and never through a symlink,
written, flushed and fsynced, then renamed over the target. A reader sees the old file or the new
one, never a part; a failure leaves the old file and no temporary file behind.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


PRIVATE_FILE_MODE = 0o600  # every file orch writes in a job folder


def write_text_atomic(path: Path, text: str, *, mode: int = PRIVATE_FILE_MODE, fsync: bool = True) -> Path:
    """Replace ``path`` with ``text`` (UTF-8) atomically; ``fsync=False`` for files that only save time
    (a cache). Raises OSError (the target is then unchanged)."""
    return write_bytes_atomic(path, text.encode("utf-8"), mode=mode, fsync=fsync)


def write_bytes_atomic(path: Path, data: bytes, *, mode: int = PRIVATE_FILE_MODE, fsync: bool = True) -> Path:
    """Replace ``path`` with ``data`` atomically (a symlink at ``path`` is replaced, never followed).
    Raises OSError (the target is then unchanged)."""
    tmp = path.with_name(f".tmp-{path.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        fd = os.open(tmp, _FLAGS, mode)
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fd, mode)  # exactly ``mode``, whatever the umask
            fh.write(data)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # gone after the rename; left only by a failure
    return path


def write_private(path: Path, text: str, *, mode: int = PRIVATE_FILE_MODE, exclusive: bool = False) -> Path:
    """Write a new (or replace a) small file in place with exactly ``mode``, never through a symlink
    (``sbatch.sh``, ``job_id``, ``submit_error.txt``, ``array.json``). Raises OSError."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags | (os.O_EXCL if exclusive else 0), mode)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        os.fchmod(fd, mode)
        fh.write(text)
    return path
