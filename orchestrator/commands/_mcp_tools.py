"""``orch mcp``'s tools besides plan and submit: status, list, logs, cancel, nodes, doctor.

Each calls the service function its verb uses (``orch status --json``'s
:func:`~orchestrator.service.status.status_table`, ``orch list``'s :func:`~orchestrator.service.joblist.list_table`,
``orch logs``'s :mod:`~orchestrator.service.logs`, ``orch cancel``'s :func:`~orchestrator.service.cancel.cancel`,
...) over the server's cluster file, and returns a JSON object. ``logs`` is bounded: at most ``lines`` lines and
``max_bytes`` bytes of each log (the limits below cap both), at most :data:`MAX_RANKS` rank logs per call, each
log on its own.
Nothing here imports the MCP SDK.
"""

from __future__ import annotations

import json
import time
from typing import Any

from orchestrator.commands._mcp_plan import Settings, require
from orchestrator.errors import OrchError
from orchestrator.service.jobs import Scope

MAX_LINES = 2000  # lines of one log per call, at most
MAX_BYTES = 1 << 20  # bytes of one log per call, at most
MAX_RANKS = 64  # rank logs per call, at most (first_rank pages on)
MAX_JOBS = 500  # status/list rows per call, at most


def _scope(settings: Settings) -> Scope:
    """The cluster file the server was started with (``orch mcp --cluster``), as the service takes it."""
    return Scope(settings.cluster)


def _json(data: Any) -> Any:
    """What ``print_json`` would print, as data (paths and times as strings)."""
    return json.loads(json.dumps(data, default=str))


def _bounded(name: str, value: int, low: int, high: int) -> int:
    if not low <= value <= high:
        raise OrchError(f"{name} {value} is out of range: {low} to {high}", hint=f"e.g. {name}={min(high, 200)}")
    return value


def status(settings: Settings, jobs: list[str], limit: int = 20) -> dict[str, Any]:
    """``orch status --json``: state, progress, blame (``failure``), ``attempts`` and the ``goodput`` ledger."""
    from orchestrator.service.status import status_table

    found = status_table(list(jobs), _scope(settings), _bounded("limit", limit, 1, MAX_JOBS))
    return {"jobs": _json(found.rows)}


def list_jobs(settings: Settings, limit: int = 20) -> dict[str, Any]:
    """``orch list --json`` with each job's blame, attempts and goodput (as ``orch status`` shows them)."""
    from orchestrator.service.joblist import list_table, with_blame

    listed = with_blame(list_table(_scope(settings), _bounded("limit", limit, 1, MAX_JOBS)))
    return {"jobs": _json(listed.rows), "more": listed.more}


def logs(settings: Settings, job: str, *, rank: int | None = None, batch: bool = False, all_ranks: bool = False,
         first_rank: int = 0, lines: int = 200, max_bytes: int = 65536) -> dict[str, Any]:
    """The end of a job's logs, each on its own: ``{"logs": [{"source", "path", "lines", "truncated", "size"}]}``;
    default: the batch log and rank 0's; ``failure``: the rank to look at, when the job failed."""
    from orchestrator.service.logs import tails

    lines, max_bytes = _bounded("lines", lines, 1, MAX_LINES), _bounded("max_bytes", max_bytes, 1, MAX_BYTES)
    if sum((rank is not None, batch, all_ranks)) > 1:
        raise OrchError("give one of rank, batch and all_ranks", hint="leave all three out for the batch log and "
                                                                      "rank 0's")
    return tails(job, _scope(settings), rank=rank, batch=batch, all_ranks=all_ranks, first_rank=first_rank,
                 lines=lines, max_bytes=max_bytes, max_ranks=MAX_RANKS)


def cancel(settings: Settings, jobs: list[str], signal: str | None = None) -> dict[str, Any]:
    """``orch cancel --json`` (``signal``: send it instead, as ``--signal``)."""
    from orchestrator.service.cancel import cancel as cancel_jobs
    from orchestrator.service.cancel import unknown_error

    require(settings.allow_cancel, "cancel")
    if not jobs:
        raise OrchError("cancel needs at least one job id or folder", hint="the list tool shows the jobs")
    done = cancel_jobs(list(jobs), _scope(settings), signal)
    if done["unknown"]:
        error = unknown_error(done["unknown"])
        acted = f" ({done['action']} sent to {', '.join(done['acted'])})" if done["acted"] else ""
        raise OrchError(error.message + acted, hint=error.hint)
    return _json(done)  # type: ignore[no-any-return]


def nodes(settings: Settings) -> dict[str, Any]:
    """``orch nodes --json``: the nodes recorded as bad that a submit leaves out."""
    from orchestrator.service.jobs import cluster_or_none
    from orchestrator.service.nodes import bad_nodes

    return _json(bad_nodes(cluster_or_none(_scope(settings)), time.time()))  # type: ignore[no-any-return]


def doctor(settings: Settings, files: list[str], ignore: list[str] | None = None) -> dict[str, Any]:
    """``orch doctor --json``: the DDP pitfalls of scripts, found without running them."""
    from orchestrator.service.doctor import asked, diagnose, ignored

    if not files:
        raise OrchError("doctor needs at least one file or folder", hint="e.g. files=['train.py']")
    checked = diagnose(files, ignored(ignore or [], _scope(settings)), asked())
    findings = checked.findings
    if checked.unreadable and not findings and not checked.skipped:
        raise checked.unreadable[0]
    hidden = sum(f.confidence == "possible" for f in findings)  # orch doctor leaves them out unless --all
    return {"findings": [f.as_dict() for f in findings], "possible": hidden, "skipped": checked.skipped,
            "unreadable": [e.render() for e in checked.unreadable], "launch": checked.notes}
