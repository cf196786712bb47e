"""The result of a local run: which rank caused a failure, and the run's status, exit code and message.

The rank named is :func:`orchestrator.records.restarts.blame.blame`'s over the ranks' outcome records, completed
with the exit codes ``orch run`` saw: the first rank that failed, or the rank that stopped progressing while the
others gave up, and where (records/stacks.py).
"""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.records import stacks
from orchestrator.records.joblayout import local_log_name as log_name
from orchestrator.records.logs.view import tail_lines
from orchestrator.records.restarts.blame import Blame
from orchestrator.records.restarts.seen import Seen, complete
from orchestrator.spec.runconfig import LOG_DIR, REQUEUE_FILE, RESULT_FILE
from orchestrator.spec.safefile import read_json
from orchestrator.task.outcome import read_outcomes

TAIL_LINES = 20
TAIL_BYTES = 1024 * 1024  # what a failure report reads of a rank's log, at most
ERROR_PREFIX = "orch: error: "


@dataclass
class LocalResult:
    job_dir: Path
    exit_code: int
    status: str  # completed | failed | preempted | interrupted
    message: str
    failed_rank: int | None = None
    rank_codes: list[int | None] = field(default_factory=list)
    result: dict[str, Any] | None = None
    failure: dict[str, Any] | None = None  # records.restarts.blame's verdict (as orch status --json shows it)
    seen: Seen | None = None  # what this runner saw of the ranks' ends (the records are completed with it)

    def summary(self) -> dict[str, Any]:
        return {"job_dir": str(self.job_dir), "exit_code": self.exit_code, "status": self.status,
                "message": self.message, "failed_rank": self.failed_rank, "rank_exit_codes": self.rank_codes,
                "failure": self.failure, "final": (self.result or {}).get("final"), "result": self.result}


def last_error(text: str) -> str | None:
    """The last ``orch: error: ...`` message a rank printed (without the prefix), if any."""
    found = [line[len(ERROR_PREFIX):].strip() for line in text.splitlines() if line.startswith(ERROR_PREFIX)]
    return re.sub(r"^rank \d+( failed)?: ", "", found[-1]) if found else None


def tail(path: Path, lines: int = TAIL_LINES) -> str:
    found, _, _ = tail_lines(path, lines, max_bytes=TAIL_BYTES)
    return "\n".join(b"".join(found).decode("utf-8", errors="replace").splitlines()[-lines:])


def read_result(job_dir: Path) -> dict[str, Any] | None:
    """The ranks' result file of ``job_dir`` (None when there is none or it is not a JSON object)."""
    return read_json(job_dir / RESULT_FILE, dict)


def local_result(job_dir: Path, nproc: int, codes: list[int | None], exited_at: dict[int, float],
                 stopped: set[int], forwarded: Sequence[int]) -> LocalResult:
    """The result of a run whose ranks exited with ``codes`` at ``exited_at`` (wall clock); ``stopped``: the ranks
    the runner stopped; ``forwarded``: the stop signals (Ctrl-C, SIGTERM) it passed on to the ranks, in order."""
    seen = _seen(codes, exited_at, stopped, job_dir)
    found = _blame(job_dir, nproc, seen)

    def outcome(exit_code: int, status: str, message: str) -> LocalResult:
        return LocalResult(job_dir=job_dir, exit_code=exit_code, status=status, message=message,
                           failed_rank=found.ranks[0] if found and found.ranks else None, rank_codes=codes,
                           result=read_result(job_dir),
                           failure=found.as_dict() if found is not None else None, seen=seen)

    interrupted = bool(forwarded)
    # interrupted: 128 + the signal, as a shell reports it (Ctrl-C 130, SIGTERM 143)
    stop_code = 128 + (forwarded[0] if forwarded else signal.SIGINT)
    if interrupted:
        cause = found.message if found is not None and found.kind != "stopped" else None
        return outcome(stop_code, "interrupted", f"interrupted; {cause}" if cause else "interrupted")
    if found is not None:
        code = found.exit_code or 1
        return outcome(code if code > 0 else 128 - code, "failed", found.message)
    if (job_dir / REQUEUE_FILE).exists():
        return outcome(0, "preempted", "preempted: the ranks checkpointed and stopped; continue with "
                                       f"orch run --resume {job_dir}")
    return outcome(0, "completed", "completed")


def _seen(codes: list[int | None], exited_at: dict[int, float], stopped: set[int], job_dir: Path) -> Seen:
    """What the runner saw: every exit code, when each rank exited, the ranks it stopped, their last errors."""
    logs = job_dir / LOG_DIR
    known = {r: c for r, c in enumerate(codes) if c is not None}
    reasons = {r: last_error(tail(logs / log_name(r), 200)) for r, c in known.items() if c}
    return Seen(codes=known, ended=exited_at, stopped=frozenset(stopped), stopped_by="orch run", reasons=reasons)


def _blame(job_dir: Path, nproc: int, seen: Seen) -> Blame | None:
    """Who stopped the run: the outcome records with what the runner saw; where each rank was (records/stacks)."""
    records, notes = read_outcomes(job_dir)
    return stacks.blamed(job_dir, complete(records, seen), world_size=nproc, notes=notes, write=True)
