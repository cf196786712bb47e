"""One ``orch run`` per job folder at a time: an exclusive ``flock`` on the folder while it runs."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from orchestrator.errors import ConfigError


@contextlib.contextmanager
def job_lock(job_dir: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the job folder: a second ``orch run`` (--resume) of the same
    folder is refused at once instead of training into it too. Released when orch run ends (also
    when it is killed: the kernel drops the lock with the process)."""
    try:
        fd = os.open(job_dir, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise ConfigError(f"cannot open the job folder {job_dir}: {exc.strerror}",
                          hint="pass the job folder that orch run printed") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise ConfigError(f"the job folder {job_dir} is in use by another orch run",
                          hint="wait for it to finish (or stop it) before resuming this folder again") from None
    try:
        yield
    finally:
        os.close(fd)
