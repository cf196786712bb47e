"""Which Slurm jobs a job folder has been: an id ``orch submit`` printed names the folder for good.

A folder's ``job_id`` moves on when its job is submitted again under a new id, and each path that does so
records the hop in the folder (``slurm/resubmit.py`` writes the new id and the job index):

- a restart whose blamed node had no spare left (``slurm/restart.py``): ``attempts.json``, the last
  attempt of the old job carries ``job`` (the old id), ``resubmitted_as`` and ``blamed_node``;
- a failed preflight with ``--preflight=exclude`` (``slurm/preflight.py``): ``preflight_attempts.json``,
  each attempt's ``job_id``, ``next_job_id`` and the nodes ``excluded`` so far;
- ``orch resubmit SWEEP --failed`` (``slurm/rerun.py``): the sweep's ``resubmissions.json``, each
  element's id before (``replaced``) and the new array's id.

:func:`chain` follows these hops from an old id to the folder's job now and says how, as
``38 -> 39 (resubmitted without node2)``; where the folder's records miss a hop, the user's job index
(``records/jobindex.py``) still shows it when it holds the newer id for the same folder, submitted later.
A Slurm requeue keeps its id: nothing to follow. Never raises; no Slurm command.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from orchestrator.env import hostlist
from orchestrator.records.jobdirs import is_job_id
from orchestrator.records.jobindex import lookup, parse_time
from orchestrator.records.joblayout import ARRAY_FILE
from orchestrator.records.restarts.attempts import read_attempts
from orchestrator.records.sweeps import read_resubmissions
from orchestrator.slurm.preflight import read_record

MAX_HOPS = 64  # a chain longer than this is no record of ours (max_restarts and preflight attempts are small)
Hops = dict[str, tuple[str, str]]  # old id -> (next id, how it came to be)


def _nodes(value: object) -> str | None:
    names = [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
    names = names or ([value] if isinstance(value, str) and value else [])
    try:
        return hostlist.compress(names) if names else None
    except hostlist.HostlistError:  # a hand-edited record: the names as they are
        return ",".join(names)


def _from_restarts(job_dir: Path) -> Iterable[tuple[Any, Any, str]]:
    for attempt in read_attempts(job_dir):
        node = _nodes(attempt.get("blamed_node"))
        yield attempt.get("job"), attempt.get("resubmitted_as"), \
            f"resubmitted without {node}" if node else "resubmitted"


def _from_preflight(job_dir: Path) -> Iterable[tuple[Any, Any, str]]:
    for attempt in (read_record(job_dir) or {}).get("attempts", []):
        nodes = _nodes(attempt.get("excluded"))
        yield attempt.get("job_id"), attempt.get("next_job_id"), \
            f"failed its preflight; resubmitted without {nodes}" if nodes else "failed its preflight; resubmitted"


def _from_sweep(job_dir: Path) -> Iterable[tuple[Any, Any, str]]:
    if not (job_dir.parent / ARRAY_FILE).is_file():
        return
    for entry in read_resubmissions(job_dir.parent):
        replaced, new = entry.get("replaced"), entry.get("job_id")
        old = replaced.get(job_dir.name) if isinstance(replaced, dict) else None
        yield old, f"{new}_{job_dir.name}" if isinstance(new, str) else None, "resubmitted by orch resubmit --failed"


# the records that move a folder's job_id on, each read into (old id, new id, how)
SOURCES: tuple[Callable[[Path], Iterable[tuple[Any, Any, str]]], ...] = (_from_restarts, _from_preflight, _from_sweep)


def hops(job_dir: Path) -> Hops:
    """Every hop the folder's records show: old id -> (next id, how)."""
    found: Hops = {}
    for source in SOURCES:
        for old, new, how in source(job_dir):
            if isinstance(old, str) and isinstance(new, str) and is_job_id(old) and is_job_id(new) and old != new:
                found[old] = (new, how)
    return found


def chain(job_dir: Path, old: str, current: str, environ: Mapping[str, str] | None = None) -> str | None:
    """``38 -> 39 (resubmitted without node2)``: how job ``old`` became the folder's job ``current``; None when
    no record says the folder ran ``old`` before it (then ``old`` is no job of this folder's)."""
    found, at, parts, seen = hops(job_dir), old, [old], {old}
    while at != current and len(parts) <= MAX_HOPS:
        nxt = found.get(at)
        if nxt is None or nxt[0] in seen:
            break
        at = nxt[0]
        seen.add(at)
        parts.append(f"{at} ({nxt[1]})")
    if at == current and len(parts) > 1:
        return " -> ".join(parts)
    return f"{old} -> {current} (submitted again)" if _indexed_later(job_dir, old, current, environ) else None


def _indexed_later(job_dir: Path, old: str, current: str, environ: Mapping[str, str] | None) -> bool:
    """Does the job index hold both ids for this folder, ``current`` submitted after ``old``?"""
    def when(job_id: str) -> float | None:
        times = [parse_time(r.submitted) for r in lookup(job_id, environ) if Path(r.job_dir) == job_dir]
        return next((t for t in times if t is not None), None)  # the newest record of the id for this folder

    before, after = when(old), when(current)
    return before is not None and after is not None and after >= before
