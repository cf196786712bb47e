"""A rank's stack read from outside with py-spy (``py-spy dump``), when the rank does not answer faulthandler.

A rank blocked in native code usually still answers SIGTERM with faulthandler's dump in its log (a C-level
handler: :mod:`orchestrator.task.hang`). One whose signals are not handled (a C library that ignores SIGTERM, a
mask on every thread) dumps nothing; ``orch run`` then asks py-spy (the optional extra ``orch[stacks]``: a binary,
never imported, found on PATH or beside ``sys.executable``) for its stack before it kills the rank, and keeps it as
``logs/rank<R>.pyspy.json``. :func:`read_dump` turns that file into a traceback (the rank's main thread, Python
frames only, each line's code) that :mod:`orchestrator.records.restarts.places` classifies as any other stack.

py-spy reads another process's memory (ptrace): the same user may, where the kernel's Yama setting is 0 (or 1 and
py-spy has CAP_SYS_PTRACE); otherwise it says so and nothing is kept. Everything here is best effort: no py-spy,
a refusal, a timeout or a damaged file leave the place as it was.
"""

from __future__ import annotations

import contextlib
import json
import linecache
import logging
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestrator.records.atomic import write_text_atomic
from orchestrator.spec.runconfig import LOG_DIR
from orchestrator.spec.safefile import read_text

log = logging.getLogger(__name__)

BINARY = "py-spy"
SUFFIX = ".pyspy.json"  # logs/ holds files only (beside rank<R>.stack.txt)
HEADER = "orch: this rank did not answer; py-spy's dump of its main thread"
DUMP_LIMIT = 4 * 1024 * 1024
TIMEOUT_S = 5.0  # py-spy pauses the process while it reads it: a fraction of a second, more on a loaded machine
# py-spy's options, best first: the native frames (then the Python frames are the same, with C ones between them)
ATTEMPTS = (("--native",), ())


def dump_path(job_dir: Path, rank: int) -> Path:
    return job_dir / LOG_DIR / f"rank{rank}{SUFFIX}"


def find() -> str | None:
    """py-spy's executable: on PATH, else beside this interpreter (a virtual environment's bin/); None."""
    found = shutil.which(BINARY)
    if found:
        return found
    beside = Path(sys.executable).with_name(BINARY)
    return str(beside) if beside.is_file() else None


def capture(pids: dict[int, int], job_dir: Path, binary: str | None = None) -> list[int]:
    """``py-spy dump --json`` of each rank's process (rank -> pid), all at once, each kept in its dump file.
    Returns the ranks dumped; nothing without py-spy."""
    binary = binary or find()
    if binary is None or not pids:
        return []
    done: list[int] = []
    for options in ATTEMPTS:
        left = {r: p for r, p in pids.items() if r not in done}
        if not left:
            break
        procs = {r: _start([binary, "dump", "--json", *options, "--pid", str(pid)]) for r, pid in left.items()}
        for rank, proc in procs.items():
            if proc is None:
                continue
            try:
                out, err = proc.communicate(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                continue
            if proc.returncode == 0 and _threads(out) is not None:
                with contextlib.suppress(OSError):
                    write_text_atomic(dump_path(job_dir, rank), out.decode("utf-8", errors="replace"), fsync=False)
                    done.append(rank)
            else:
                log.debug("py-spy %s of rank %d: exit %s: %s", " ".join(options), rank, proc.returncode,
                          err.decode(errors="replace")[-300:])
    return sorted(done)


def _start(argv: Sequence[str]) -> subprocess.Popen[bytes] | None:
    try:
        return subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    except OSError as exc:
        log.debug("py-spy did not start: %s", exc)
        return None


def _threads(raw: bytes | str) -> list[dict[str, Any]] | None:
    """py-spy's JSON: a list of threads (dicts); None when it is anything else."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, list) or not all(isinstance(t, dict) for t in data):
        return None
    return data


def main_frames(threads: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    """The main thread's Python frames, outermost first, as (file, line, function): the thread whose id is the
    process's, else the one that runs ``<module>``, else the first. Native frames (``--native``: a ``module``,
    a shared library) are left out."""
    def frames(thread: dict[str, Any]) -> list[dict[str, Any]]:
        found = thread.get("frames")
        return [f for f in found if isinstance(f, dict)] if isinstance(found, list) else []

    main = next((t for t in threads if t.get("os_thread_id") is not None and t.get("os_thread_id") == t.get("pid")),
                None)
    main = main or next((t for t in threads if any(f.get("name") == "<module>" for f in frames(t))), None)
    main = main or (threads[0] if threads else None)
    if main is None:
        return []
    python = [(str(f.get("filename")), f.get("line"), str(f.get("name"))) for f in frames(main)
              if f.get("module") is None and isinstance(f.get("filename"), str)]
    return [(file, line, name) for file, line, name in reversed(python) if isinstance(line, int) and line > 0]


def read_dump(job_dir: Path, rank: int) -> str | None:
    """Rank ``rank``'s py-spy dump as a traceback (outermost first, each line's code as the file is now); None
    without a dump, or with one that holds no Python frame."""
    threads = _threads(read_text(dump_path(job_dir, rank), DUMP_LIMIT) or "")
    frames = main_frames(threads) if threads is not None else []
    if not frames:
        return None
    return f"{HEADER}\nTraceback (most recent call last):\n" + "".join(
        f'  File "{file}", line {line}, in {name}\n    {linecache.getline(file, line).strip()}\n'
        for file, line, name in frames)
