"""Files written whole or not at all: the one atomic-write helper (torch-free), for every file orch
rewrites in place (``job.json``, outcome records, ``metrics.jsonl``, ``result.json``,
``progress.json``, the checkpoint sidecars, the cache).

A temporary file beside the target (same folder, so the rename cannot cross file systems), created
with ``mode`` less the umask and never through a symlink, written, flushed and fsynced, then renamed
over the target. A reader sees the old file or the new one, never a part; a failure leaves the old
file and no temporary file behind.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def write_text_atomic(path: Path, text: str, *, mode: int = 0o666, fsync: bool = True) -> Path:
    """Replace ``path`` with ``text`` (UTF-8) atomically; ``fsync=False`` for files that only save time
    (a cache). Raises OSError (the target is then unchanged)."""
    tmp = path.with_name(f".tmp-{path.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        fd = os.open(tmp, _FLAGS, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # gone after the rename; left only by a failure
    return path
