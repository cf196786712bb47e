"""A sweep's folder (a job array: ``array.json``, one element folder per index, see
:mod:`orchestrator.records.jobdirs`) as one thing: its elements, the ids it was queued under, and its
resubmissions (``orch resubmit --failed``), the one owner of ``resubmissions.json``.

``resubmissions.json`` is a JSON list, one entry per resubmission, oldest first::

    {"job_id": "4250", "indices": [1, 3], "submitted": "2026-...", "previous": "4242",
     "replaced": {"1": "4242_1", "3": "4242_3"}}

``job_id``: the new array's id (its elements are ``<job_id>_<index>``); ``previous``: the array id the folder
held before; ``replaced``: each element's id before. The elements' own ``job_id`` files hold their latest
run, so ``orch status`` and ``orch compare`` show each element's latest run; the ids of every submission of
the sweep (:func:`sweep_ids`) find its folder (:func:`find_sweep`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from orchestrator.records.atomic import write_text_atomic
from orchestrator.records.jobdirs import JobDir, is_job_id, read_id, read_job_dir
from orchestrator.records.joblayout import ARRAY_FILE, element_dir
from orchestrator.spec.runconfig import JOB_FILE, JOB_ID_FILE
from orchestrator.spec.safefile import read_json

RESUBMISSIONS_FILE = "resubmissions.json"
MAX_BYTES = 1024 * 1024


def is_sweep(folder: Path) -> bool:
    """A job array's own folder (array.json, no job.json of its own); not one that cannot be looked into
    (another user's, in a shared job root)."""
    try:
        return (folder / ARRAY_FILE).is_file() and not (folder / JOB_FILE).is_file()
    except OSError:
        return False


def sweep_of(job_dir: Path) -> Path | None:
    """The sweep folder of an element folder (``<sweep>/<index>``), else None."""
    return job_dir.parent if job_dir.name.isdigit() and is_sweep(job_dir.parent) else None


def indices(folder: Path) -> list[int]:
    """The indices of the sweep's element folders (those with a job.json), in order."""
    try:
        names = [entry.name for entry in os.scandir(folder)]
    except OSError:
        return []
    found = (int(n) for n in names if n.isascii() and n.isdigit() and len(n) < 10)
    return sorted(i for i in found if (element_dir(folder, i) / JOB_FILE).is_file())


def elements(folder: Path) -> list[JobDir]:
    """The sweep's element folders, in index order (each one's job_id: its latest run)."""
    return [read_job_dir(element_dir(folder, index)) for index in indices(folder)]


def read_resubmissions(folder: Path) -> list[dict[str, Any]]:
    """The sweep's resubmissions, oldest first (a missing or damaged file reads as none)."""
    data = read_json(folder / RESUBMISSIONS_FILE, list, MAX_BYTES)
    return [entry for entry in data if isinstance(entry, dict)] if data is not None else []


def record_resubmission(folder: Path, job_id: str, replaced: Mapping[int, str | None], *, previous: str | None,
                        submitted: str) -> dict[str, Any]:
    """Add one resubmission (``replaced``: index -> the element's id before) to ``resubmissions.json``."""
    entry = {"job_id": job_id, "indices": sorted(replaced), "submitted": submitted, "previous": previous,
             "replaced": {str(i): old for i, old in sorted(replaced.items())}}
    history = [*read_resubmissions(folder), entry]
    write_text_atomic(folder / RESUBMISSIONS_FILE, json.dumps(history, indent=1, sort_keys=True) + "\n")
    return entry


def sweep_ids(folder: Path) -> set[str]:
    """Every array id the sweep was queued under: its ``job_id`` now and each resubmission's new and previous."""
    ids = {read_id(folder / JOB_ID_FILE)}
    for entry in read_resubmissions(folder):
        ids.update(value for key in ("job_id", "previous") if isinstance(value := entry.get(key), str))
    return {i for i in ids if i is not None and is_job_id(i)}


def _sweeps(root: Path) -> Iterator[Path]:
    try:
        names = [entry.name for entry in os.scandir(root)]
    except OSError:
        return
    for name in sorted(names, reverse=True):  # newest first: the folder names start with the time stamp's date
        if is_sweep(root / name):
            yield root / name


def find_sweep(root: Path, array_id: str) -> Path | None:
    """The sweep folder under ``root`` queued under ``array_id`` (any of its submissions), else None."""
    if not is_job_id(array_id) or "_" in array_id:
        return None
    return next((folder for folder in _sweeps(root) if array_id in sweep_ids(folder)), None)
