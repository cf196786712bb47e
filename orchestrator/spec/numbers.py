"""Numbers and paths read from text orch does not control (Slurm's answers, job-folder records, the
command line), bounded before anything is built from them (pure).

- Integers are ASCII digits only (``[0-9]``, never ``\\d``, which also matches Arabic-Indic or
  superscript digits that ``int()`` then accepts or chokes on) and at most :data:`MAX_INT_DIGITS`
  long, far below Python's int-string conversion limit (4,300 digits): :func:`parse_int`.
- Floats are made from JSON numbers with :func:`to_float`, which gives None for a 400-digit integer
  (``float()`` would raise OverflowError) and for NaN/inf.
- Paths typed by a user are checked with :func:`check_path` (PATH_MAX, NAME_MAX, NUL) before any
  ``stat``, so an over-long path is an error naming the option instead of an OSError traceback.
- ``orch run --nproc`` is bounded by :func:`max_local_ranks` before a single process starts.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path

from orchestrator.errors import ConfigError

MAX_INT_DIGITS = 40  # job ids, exit codes, restart counts, elapsed seconds: 20 digits hold 64 bits
PATH_MAX = 4096  # Linux: bytes of a path, the final NUL included
NAME_MAX = 255  # Linux: bytes of one file name
MAX_LOCAL_RANKS = 1024  # orch run --nproc: the most processes one machine gets ...
LOCAL_RANKS_PER_CPU = 4  # ... and at most 4 per CPU core (at least MIN_LOCAL_RANK_LIMIT on small machines)
MIN_LOCAL_RANK_LIMIT = 8

_INT_RE = re.compile(r"[+-]?[0-9]+", re.ASCII)
_OVERRIDE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*=")


def parse_int(text: str | bytes | None, *, digits: int = MAX_INT_DIGITS, signed: bool = False) -> int | None:
    """The integer ``text`` holds (surrounding whitespace allowed), or None: not ASCII digits only, a
    sign when ``signed`` is False, or more than ``digits`` digits."""
    if text is None:
        return None
    if isinstance(text, bytes):
        text = text.decode("ascii", errors="replace")
    text = text.strip()
    if not text or len(text) > digits + 1 or not _INT_RE.fullmatch(text):
        return None
    if text[0] in "+-" and not signed:
        return None
    if len(text.lstrip("+-")) > digits:
        return None
    return int(text)


def to_float(value: object) -> float | None:
    """A JSON number as a finite float, or None (not a number, a bool, too large for a float, NaN/inf)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int) and value.bit_length() > 1023:
        return None
    try:
        result = float(value)
    except (OverflowError, ValueError):
        return None
    return result if math.isfinite(result) else None


def to_int(value: object, *, digits: int = MAX_INT_DIGITS) -> int | None:
    """A JSON integer of at most ``digits`` digits (not a bool), or None."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if value.bit_length() <= digits * 10 // 3 else None


def path_problem(text: str) -> str | None:
    """Why ``text`` cannot be a path on Linux (NUL, longer than PATH_MAX, a name longer than NAME_MAX)."""
    if "\0" in text:
        return "contains a NUL character"
    size = len(text.encode("utf-8", errors="surrogateescape"))
    if size >= PATH_MAX:
        return f"is {size:,} bytes long; a path holds at most {PATH_MAX - 1:,}"
    longest = max((len(part.encode("utf-8", errors="surrogateescape")) for part in text.split("/")), default=0)
    if longest > NAME_MAX:
        return f"has a name of {longest:,} bytes; a file name holds at most {NAME_MAX}"
    return None


def check_path(text: str, what: str) -> str:
    """``text`` itself, or a ConfigError naming ``what`` (an option, JOB) when it cannot be a path."""
    problem = path_problem(text)
    if problem is not None:
        shown = text if len(text) <= 80 else f"{text[:50]}...{text[-20:]}"
        raise ConfigError(f"{what} {shown!r} {problem}", hint=f"pass a shorter {what}")
    return text


def max_local_ranks(cpus: int) -> int:
    """The most ranks ``orch run`` starts on a machine of ``cpus`` cores: 4 per core, at least 8, at
    most 1024 (more would only make the machine thrash, and each rank is a whole Python process)."""
    return max(MIN_LOCAL_RANK_LIMIT, min(MAX_LOCAL_RANKS, LOCAL_RANKS_PER_CPU * max(1, cpus)))


def ascii_int(text: str) -> int:
    """argparse's ``type=int`` for orch's options: ASCII digits only, at most MAX_INT_DIGITS (ValueError)."""
    value = parse_int(text, signed=True)
    if value is None:
        raise ValueError(text)
    return value


def ascii_float(text: str) -> float:
    """argparse's ``type=float``: ASCII only (``float()`` takes any script's digits), finite (ValueError)."""
    if not text.isascii() or len(text) > 100:
        raise ValueError(text)
    value = float(text)
    if not math.isfinite(value):  # argparse prints this message: "argument --interval: ... 'nan'"
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: not a finite number (use a plain decimal, "
                                         "e.g. 0.5)")
    return value


# the options and operands that name a file or folder: checked as paths before anything looks at them
PATH_ARGUMENTS = {"cluster": "--cluster", "templates": "--templates", "data_dir": "--data-dir", "module": "-m",
                  "job": "JOB", "jobs": "JOBID|DIR", "resume": "--resume", "job_root": "--job-root",
                  "output": "-o", "files": "FILE"}


def check_path_arguments(values: dict[str, object]) -> None:
    """ConfigError naming the option when a path argument (:data:`PATH_ARGUMENTS`) cannot be a path."""
    for dest, what in PATH_ARGUMENTS.items():
        value = values.get(dest)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and not (dest == "job" and _OVERRIDE_RE.match(item)):
                check_path(item, what)  # (`orch run --resume DIR key=value`: the override lands in JOB)


_OS_HINTS = {
    errno.EROFS: "the file system is read-only: pass a folder on a writable one (e.g. -o for orch plot, or copy the "
                 "job folder)",
    errno.ENAMETOOLONG: f"a file name holds at most {NAME_MAX} bytes and a path {PATH_MAX - 1}: shorten it",
    errno.ELOOP: "a symbolic link on the way points back to itself (a loop): fix or remove it",
    errno.ENOSPC: "the file system is full: free space on it (orch run, orch submit: or point --job-root elsewhere)",
    errno.EDQUOT: "your disk quota is used up: free some space (orch run, orch submit: or point --job-root elsewhere)",
    errno.EACCES: "you may not access it: check the permissions",
    errno.EPERM: "you may not access it: check the permissions",
}


def os_error(exc: OSError) -> ConfigError:
    """A file-system error no verb expected, as one clear error (the file, the reason, the fix)."""
    reason = exc.strerror or type(exc).__name__
    where = exc.filename if isinstance(exc.filename, (str, bytes)) else None
    if where is None and exc.errno == errno.ENOENT:
        try:
            os.getcwd()
        except OSError:
            return ConfigError("the current folder no longer exists (it was deleted or moved)",
                               hint="cd to an existing folder and run orch again")
    shown = os.fsdecode(where) if where is not None else ""
    shown = shown if len(shown) <= 120 else f"{shown[:80]}...{shown[-30:]}"
    return ConfigError(f"{reason}: {shown}" if shown else reason,
                       hint=_OS_HINTS.get(exc.errno or 0, "check the path and try again"))


FULL_DISK = frozenset({errno.ENOSPC, errno.EDQUOT})  # a write that fails for space: the disk or the quota


def full_disk(path: Path, exc: OSError) -> ConfigError:
    """A rank's write of ``path`` (a checkpoint, metrics.jsonl, result.json, ...) that failed for space."""
    reason = exc.strerror or os.strerror(exc.errno or 0)
    return ConfigError(f"cannot write {path}: {reason}",
                       hint=f"free space on the file system of {path.parent} (or your quota there), or point the "
                            "job root elsewhere (launcher.job_root, orch run --job-root); the newest complete "
                            "checkpoint is kept: a resume or requeue continues from it")


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Writes of ``path`` in the block: a full disk or quota is :func:`full_disk`'s one error (other errors
    pass unchanged)."""
    try:
        yield
    except OSError as exc:
        if exc.errno in FULL_DISK:
            raise full_disk(path, exc) from None
        raise
