"""``orch top``'s data of one selected job: rank 0's log tail, every rank's state, the start-up phases, the
attempts and the goodput ledger, read through the board's memo (a file is read again only when its stamp
changed: :mod:`orchestrator.records.live`). The pane's text is :mod:`orchestrator.views.detail`'s.

Every rank's state is its outcome record of the newest run (:mod:`orchestrator.task.outcome`: ``running``
from its start, then how it ended) and its last step; a rank without a record has not started. The
start-up phases are ``result.json``'s ``startup`` (rank 0 writes it when it ends: ``orch status JOB``'s).
The start-up, attempt and ledger lines are ``orch status JOB``'s own (its formatters in ``records/``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.records.jobdirs import JobDir
from orchestrator.records.joblayout import log_path
from orchestrator.records.live import Memo
from orchestrator.records.logs.view import tail_lines
from orchestrator.records.restarts.attempts import ATTEMPTS_FILE, format_attempts, format_ledger, read_attempts
from orchestrator.records.restarts.rankoutcome import current_run
from orchestrator.records.startup import format_startup
from orchestrator.records.training import read_result
from orchestrator.spec.numbers import to_float
from orchestrator.spec.runconfig import LOG_DIR, RESULT_FILE
from orchestrator.task.outcome import read_outcomes

LOG_LINES = 12  # rank 0's last lines read


@dataclass(frozen=True)
class RankState:
    rank: int
    kind: str  # the outcome record's kind, "not started" without one
    host: str | None = None
    last_step: str | None = None  # "epoch 2 step 120"
    reason: str | None = None


@dataclass(frozen=True)
class Detail:
    key: str
    log_file: Path
    log: tuple[str, ...]
    ranks: tuple[RankState, ...]
    startup: str | None  # format_startup's lines
    attempts: tuple[str, ...]
    ledger: str | None


def read_detail(job: JobDir, memo: Memo[Any], lines: int = LOG_LINES) -> Detail:
    """The detail of ``job``; each part read again only when its files changed."""
    path = job.path
    log_file = log_path(path, job.job_id if job.mode == "slurm" else None, 0)
    tail = memo.get((path, "log0"), [log_file], lambda: tail_lines(log_file, lines)[0], extra=lines)
    text = tuple(raw.decode("utf-8", "replace").rstrip("\r\n") for raw in tail)
    ranks = memo.get((path, "ranks"), [path / LOG_DIR], lambda: _ranks(job))
    result = memo.get((path, "result"), [path / RESULT_FILE], lambda: read_result(path))
    attempts = memo.get((path, "attempts"), [path / ATTEMPTS_FILE], lambda: read_attempts(path))
    startup = result.get("startup") if isinstance(result, dict) else None
    phases = {str(k): v for k, v in startup.items() if to_float(v) is not None} if isinstance(startup, dict) else {}
    goodput = result.get("goodput") if isinstance(result, dict) else None
    return Detail(key=str(path), log_file=log_file, log=text, ranks=ranks,
                  startup=format_startup({k: float(v) for k, v in phases.items()}) if phases else None,
                  attempts=tuple(format_attempts(attempts)),
                  ledger=format_ledger(goodput) if isinstance(goodput, dict) else None)


def _ranks(job: JobDir) -> tuple[RankState, ...]:
    records, _ = read_outcomes(job.path)
    run = job.job_id if job.mode == "slurm" else "local"
    mine, _ = current_run([r for r in records if r.run == run] or records)
    size = max([job.config.world_size if job.config else 0, *(r.rank + 1 for r in mine.values())])
    states = []
    for rank in range(size):
        record = mine.get(rank)
        if record is None:
            states.append(RankState(rank, "not started"))
            continue
        step = f"epoch {record.last_step.epoch} step {record.last_step.step}" if record.last_step else None
        kind = record.kind if record.exit_code is None or record.kind != "running" else f"ended ({record.exit_code})"
        states.append(RankState(rank, kind, record.host, step, record.reason))
    return tuple(states)
