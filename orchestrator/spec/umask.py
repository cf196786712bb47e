"""The umask a job's script runs under (one owner): the user's, as at ``orch submit``/``orch run`` time.

| who writes                                   | mode                                                 |
| -------------------------------------------- | ---------------------------------------------------- |
| orch's records (the job folder, its logs)    | ``0700``/``0600`` exactly (chmod), whatever the umask |
| the user's script (rank processes, children) | ``launcher.umask`` (cluster.yaml), else the user's    |
|                                              | umask when the job was submitted or run              |

The umask is recorded in ``job.json`` (``umask``: an octal string such as ``"0022"``), so a restart, a
requeue and a resubmission use the same one. The task process keeps umask ``077`` for orch's own files
and hands the recorded one to the script right before it runs (``orchestrator.task.scriptrun``).
``orchestrator.cli`` tightens the umask of its own process (never group- or world-writable records):
it calls :func:`remember_user_umask` first, so what the script gets is the user's real umask.
"""

from __future__ import annotations

import os
import re

PRIVATE_UMASK = 0o077  # orch's own writes; a job.json of an older orch (no ``umask``): the script's too
_UMASK_RE = re.compile(r"0?[0-7]{3}\Z")
_remembered: list[int] = []  # the user's umask before orch.cli changed it (this process's, once)


def check_umask(value: str | None) -> str | None:
    """``launcher.umask`` / job.json's ``umask``: an octal string (``"022"`` or ``"0022"``), as ``"0022"``."""
    if value is None:
        return None
    if not _UMASK_RE.match(value):
        raise ValueError(f"{value!r} is not an octal umask: write it as a quoted string of 3 or 4 digits "
                         'from 0 to 7, such as "0022" (others may read) or "0027" (your group may read)')
    return format_umask(int(value, 8))


def format_umask(mask: int) -> str:
    return f"{mask & 0o777:04o}"


def umask_value(text: str | None) -> int:
    """The umask a recorded string stands for (None: :data:`PRIVATE_UMASK`, as orch did before)."""
    return PRIVATE_UMASK if text is None else int(text, 8) & 0o777


def remember_user_umask(mask: int) -> None:
    """Called by the CLI with the umask it found, before it tightens its own."""
    _remembered[:] = [mask & 0o777]


def user_umask() -> int:
    """The user's umask: the one the CLI found, else this process's (a caller of ``orchestrator.api``)."""
    if _remembered:
        return _remembered[0]
    current = os.umask(0o077)
    os.umask(current)
    return current


def script_umask(configured: str | None) -> str:
    """What ``job.json`` records: ``launcher.umask`` when set, else the user's umask now."""
    return configured if configured is not None else format_umask(user_umask())
