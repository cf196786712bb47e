"""Files a follow-up verb writes on request (``orch plot``'s PNG): the mode follows where they go.

| the file goes                                         | its mode                                              |
| ----------------------------------------------------- | ----------------------------------------------------- |
| into a job folder (a folder, or a folder inside one,   | ``0600`` exactly, whatever the umask, written whole   |
| that holds ``job.json`` or a sweep's ``array.json``)   | (a file or link already there is replaced, not        |
|                                                       | followed): job folders are the user's alone           |
| anywhere else (``-o PATH`` outside a job folder,       | the user's umask, as any program's output (never      |
| ``./orch-plot.png``)                                  | group- or world-writable: ``cli.no_world_write``)     |

See docs/trust.md ("Private job folders").
"""

from __future__ import annotations

import os
from pathlib import Path

from orchestrator.records.atomic import PRIVATE_FILE_MODE, write_bytes_atomic
from orchestrator.records.joblayout import ARRAY_FILE
from orchestrator.spec.runconfig import JOB_FILE

_MARKERS = (JOB_FILE, ARRAY_FILE)  # what makes a folder a job folder (a run's, a sweep's)


def job_folder_of(path: Path) -> Path | None:
    """The job folder ``path`` would lie in (its folder or one above it holds job.json or array.json),
    else None. Links in the folders are resolved: a link to a job folder leads into one."""
    folder = Path(os.path.realpath(path.parent if path.name else path))
    for candidate in (folder, *folder.parents):
        if any((candidate / marker).is_file() for marker in _MARKERS):
            return candidate
    return None


def write_output(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` with the mode of the table above. Raises OSError."""
    if job_folder_of(path) is not None:
        return write_bytes_atomic(path, data, mode=PRIVATE_FILE_MODE, fsync=False)
    with open(path, "wb") as fh:  # a new file gets 0666 & ~umask; an existing one keeps its mode
        fh.write(data)
    return path
