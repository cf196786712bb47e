"""``orch mcp``'s tools besides plan and submit: status, list, logs, cancel, nodes, doctor.

Each calls the function its verb uses (``orch status --json``'s :func:`~orchestrator.commands.status.status_table`,
``orch list``'s :func:`~orchestrator.commands.list_jobs.list_table`, ...) with the arguments the verb would
parse, and returns a JSON object. ``logs`` is bounded: at most ``lines`` lines and ``max_bytes`` bytes of
each log (the limits below cap both), at most :data:`MAX_RANKS` rank logs per call, each log on its own.
Nothing here imports the MCP SDK.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from orchestrator.commands._mcp_plan import Settings, require
from orchestrator.errors import OrchError

MAX_LINES = 2000  # lines of one log per call, at most
MAX_BYTES = 1 << 20  # bytes of one log per call, at most
MAX_RANKS = 64  # rank logs per call, at most (first_rank pages on)
MAX_JOBS = 500  # status/list rows per call, at most


def _args(settings: Settings, **values: Any) -> argparse.Namespace:
    return argparse.Namespace(cluster=settings.cluster, json=True, **values)


def _json(data: Any) -> Any:
    """What ``print_json`` would print, as data (paths and times as strings)."""
    return json.loads(json.dumps(data, default=str))


def _bounded(name: str, value: int, low: int, high: int) -> int:
    if not low <= value <= high:
        raise OrchError(f"{name} {value} is out of range: {low} to {high}", hint=f"e.g. {name}={min(high, 200)}")
    return value


def status(settings: Settings, jobs: list[str], limit: int = 20) -> dict[str, Any]:
    """``orch status --json``: state, progress, blame (``failure``), ``attempts`` and the ``goodput`` ledger."""
    from orchestrator.commands.status import status_table

    table, _, _ = status_table(_args(settings, jobs=list(jobs), limit=_bounded("limit", limit, 1, MAX_JOBS)))
    return {"jobs": _json(table)}


def list_jobs(settings: Settings, limit: int = 20) -> dict[str, Any]:
    """``orch list --json`` with each job's blame, attempts and goodput (as ``orch status`` shows them)."""
    from orchestrator.commands.list_jobs import list_table
    from orchestrator.commands.status import with_attempts, with_failure, with_goodput

    table, found, more = list_table(_args(settings, limit=_bounded("limit", limit, 1, MAX_JOBS)))
    jobs: list[Any] = list(found)
    table = with_goodput(with_failure(with_attempts(table, jobs), jobs), jobs)
    return {"jobs": _json(table), "more": more}


def logs(settings: Settings, job: str, *, rank: int | None = None, batch: bool = False, all_ranks: bool = False,
         first_rank: int = 0, lines: int = 200, max_bytes: int = 65536) -> dict[str, Any]:
    """The end of a job's logs, each on its own: ``{"logs": [{"source", "path", "lines", "truncated", "size"}]}``;
    default: the batch log and rank 0's; ``failure``: the rank to look at, when the job failed."""
    from orchestrator.commands._common import scope
    from orchestrator.commands.logs import make_view, missing_error
    from orchestrator.records.logs.view import rank_logs, tail_lines
    from orchestrator.service.jobs import find_job
    from orchestrator.slurm import jobstate

    lines, max_bytes = _bounded("lines", lines, 1, MAX_LINES), _bounded("max_bytes", max_bytes, 1, MAX_BYTES)
    if sum((rank is not None, batch, all_ranks)) > 1:
        raise OrchError("give one of rank, batch and all_ranks", hint="leave all three out for the batch log and "
                                                                      "rank 0's")
    args = _args(settings, job=job, rank=rank, batch=batch, all_ranks=all_ranks, lines=lines)
    folder = find_job(job, scope(args))
    view = make_view(args, folder)
    if view.mode == "all":
        found = [(r, p) for r, p in rank_logs(folder).items() if r >= first_rank]
        named = [(f"rank {r}", p) for r, p in found[:MAX_RANKS]]
        later = [r for r, _ in found[MAX_RANKS:]]
    else:
        batch_path = view.batch_path()
        named = {"batch": [("batch", batch_path)] if batch_path else [],
                 "rank": [(f"rank {view.rank}", view.rank_path(view.rank or 0))]}.get(
            view.mode, [*([("batch", batch_path)] if batch_path else []), ("rank 0", view.rank_path(0))])
        later = []
    shown = []
    for source, path in named:
        if not path.is_file():
            continue
        tail, size, cut = tail_lines(path, lines, max_bytes=max_bytes)
        shown.append({"source": source, "path": str(path), "size": size, "truncated": cut,
                      "lines": [line.decode("utf-8", errors="replace").rstrip("\n") for line in tail]})
    if not shown:
        raise missing_error(view)
    failure = jobstate.failure(folder)
    return {"job_id": folder.job_id, "job_dir": str(folder.path), "logs": shown,
            "more_ranks_from": later[0] if later else None,
            "failure": failure.as_dict() if failure is not None else None}


def cancel(settings: Settings, jobs: list[str], signal: str | None = None) -> dict[str, Any]:
    """``orch cancel --json`` (``signal``: send it instead, as ``--signal``)."""
    from orchestrator.commands.cancel import act, unknown_error

    require(settings.allow_cancel, "cancel")
    if not jobs:
        raise OrchError("cancel needs at least one job id or folder", hint="the list tool shows the jobs")
    done = act(list(jobs), _args(settings, jobs=list(jobs), signal=signal), signal)
    if done["unknown"]:
        error = unknown_error(done["unknown"])
        acted = f" ({done['action']} sent to {', '.join(done['acted'])})" if done["acted"] else ""
        raise OrchError(error.message + acted, hint=error.hint)
    return _json(done)  # type: ignore[no-any-return]


def nodes(settings: Settings) -> dict[str, Any]:
    """``orch nodes --json``: the nodes recorded as bad that a submit leaves out."""
    from orchestrator.commands._common import scope
    from orchestrator.commands.nodes import bad_nodes
    from orchestrator.service.jobs import cluster_or_none

    return _json(bad_nodes(cluster_or_none(scope(_args(settings))), time.time()))  # type: ignore[no-any-return]


def doctor(settings: Settings, files: list[str], ignore: list[str] | None = None) -> dict[str, Any]:
    """``orch doctor --json``: the DDP pitfalls of scripts, found without running them."""
    from orchestrator.commands.doctor import check_files

    if not files:
        raise OrchError("doctor needs at least one file or folder", hint="e.g. files=['train.py']")
    findings, skipped, unreadable, notes = check_files(_args(settings, files=list(files), ignore=list(ignore or [])))
    if unreadable and not findings and not skipped:
        raise unreadable[0]
    hidden = sum(f.confidence == "possible" for f in findings)  # orch doctor leaves them out unless --all
    return {"findings": [f.as_dict() for f in findings], "possible": hidden, "skipped": skipped,
            "unreadable": [e.render() for e in unreadable], "launch": notes}
