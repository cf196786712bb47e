"""A script rank's torchelastic error file, ``logs/rank<R>.error.json`` (:func:`joblayout.error_file_path`).

orch exports it as the rank's ``TORCHELASTIC_ERROR_FILE`` (``task/scriptenv.py``), as torchrun does for
its workers, so a script whose entry point is decorated with
``torch.distributed.elastic.multiprocessing.errors.record`` writes its uncaught exception there:
``{"message": {"message": "ValueError: ...", "extraInfo": {"py_callstack": "<traceback>", ...}}}``
(torch's ``ErrorHandler.record_exception``; a re-raised child failure may carry ``message`` as a plain
string). :func:`read_error_file` reads it back as the message and the innermost file and line of its
traceback: the failing rank's outcome record says them (``task/launch.py``), and blame, ``orch status``
and ``orch logs`` show that record's reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from orchestrator.records.joblayout import error_file_path

ERROR_FILE_LIMIT = 1 << 20  # bytes read of an error file (a traceback, not a data dump)
MESSAGE_LIMIT = 500  # characters of the message kept
_FRAME = re.compile(r'File "([^"\n]+)", line (\d+)')


@dataclass(frozen=True)
class RecordedError:
    """What a rank's error file says: the exception's one-line message, and where it was raised."""

    path: Path
    message: str
    file: str | None = None
    line: int | None = None

    def describe(self) -> str:
        where = f"raised at {self.file}:{self.line}; " if self.file is not None else ""
        return f"{self.message} ({where}torchelastic error file {self.path})"


def parse_error_file(text: str, path: Path) -> RecordedError | None:
    """The recorded error of an error file's text; None when it is not one torchelastic writes."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    body = data.get("message") if isinstance(data, dict) else None
    if isinstance(body, str):
        body = {"message": body}
    if not isinstance(body, dict) or not isinstance(body.get("message"), str) or not body["message"].strip():
        return None
    lines = body["message"].strip().splitlines()
    extra = body.get("extraInfo")
    stack = extra.get("py_callstack") if isinstance(extra, dict) else None
    frames = _FRAME.findall(stack) if isinstance(stack, str) else []
    file, line = (frames[-1][0], int(frames[-1][1])) if frames else (None, None)
    return RecordedError(path=path, message=lines[0][:MESSAGE_LIMIT], file=file, line=line)


def read_error_file(job_dir: Path, rank: int) -> RecordedError | None:
    """Rank ``rank``'s recorded error, None when it wrote none (or something unreadable)."""
    path = error_file_path(job_dir, rank)
    try:
        with path.open("rb") as fp:
            raw = fp.read(ERROR_FILE_LIMIT + 1)
    except OSError:
        return None
    if len(raw) > ERROR_FILE_LIMIT:
        return None
    return parse_error_file(raw.decode("utf-8", errors="replace"), path)
