"""What orch records when sbatch has queued a job: the folder's ``submitted.json`` and one line in
the user's index of submitted jobs, so that ``orch logs/status/cancel JOB`` find the job's folder
without the submit's ``--cluster``, and so that a Slurm job id that was reused (ids restart when a
cluster is rebuilt; two clusters can share one job root) is never mistaken for this folder's job.

The index is append-only JSON lines, ``jobs.jsonl`` in the user's state folder: ``$ORCH_STATE_DIR``,
else ``$XDG_STATE_HOME/orch``, else ``~/.local/state/orch`` (mode 0700, the file 0600). Each line:
``{"job_id", "cluster", "job_dir", "submitted", "job_name"}``. Reads are bounded (the newest
:data:`INDEX_READ_BYTES` of the file) and skip a torn or damaged line; writing it is best effort (a
full disk never fails a submit that Slurm already accepted).

``submitted.json`` in the job folder holds the same record: ``submitted`` is the time taken right
after sbatch returned, so it is a little later than Slurm's SubmitTime (:func:`same_submit`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from orchestrator.records.atomic import write_text_atomic
from orchestrator.spec.safefile import open_regular

log = logging.getLogger(__name__)

STATE_DIR_ENV_VAR = "ORCH_STATE_DIR"
INDEX_FILE = "jobs.jsonl"
SUBMITTED_FILE = "submitted.json"  # in the job folder
INDEX_READ_BYTES = 1 << 20  # the newest 1 MiB of the index (about 5000 jobs) is read, never more
LINE_LIMIT = 8192  # a longer line is no record of ours
# orch records the time after sbatch returned: it is later than Slurm's SubmitTime by sbatch's own
# run time (seconds at most); SLACK_BEFORE covers clocks that differ a little (login node, controller).
SLACK_BEFORE = 5.0
SLACK_AFTER = 130.0  # sbatch may take up to its timeout (120 s) before it prints the id
CREATED_SLACK_AFTER = 600.0  # folders without submitted.json: job.json's "created" is before the doctor and sbatch


@dataclass(frozen=True)
class Submitted:
    """One submitted job: where its folder is and what identifies it to Slurm."""

    job_id: str
    job_dir: str
    submitted: str  # ISO 8601 with the UTC offset, right after sbatch returned
    job_name: str  # the name Slurm knows (sbatch --job-name)
    cluster: str | None = None  # cluster.yaml's name
    remote: str | None = None  # submitted over SSH (docs/remote.md): the cluster file used; job_dir is there

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The user's state folder for orch (see the module doc)."""
    env = os.environ if environ is None else environ
    if env.get(STATE_DIR_ENV_VAR):
        return Path(env[STATE_DIR_ENV_VAR]).expanduser()
    base = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local" / "state")
    return Path(base).expanduser() / "orch"


def index_path(environ: Mapping[str, str] | None = None) -> Path:
    return state_dir(environ) / INDEX_FILE


def now_text() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")  # UTC, whatever TZ says


def record_submit(job_dir: Path, record: Submitted, environ: Mapping[str, str] | None = None) -> None:
    """``submitted.json`` in the folder and one line in the index (both best effort: logged, not raised)."""
    text = json.dumps(record.as_dict(), indent=2, sort_keys=True) + "\n"
    try:
        write_text_atomic(job_dir / SUBMITTED_FILE, text)
    except OSError as exc:
        log.warning("cannot write %s: %s", job_dir / SUBMITTED_FILE, exc.strerror)
    append_index(record, environ)


def append_index(record: Submitted, environ: Mapping[str, str] | None = None) -> None:
    path = index_path(environ)
    line = (json.dumps(record.as_dict(), sort_keys=True, ensure_ascii=True) + "\n").encode("ascii")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.write(fd, line)  # one write of one line: appends from two shells do not interleave
        finally:
            os.close(fd)
    except OSError as exc:
        log.warning("cannot add job %s to %s: %s", record.job_id, path, exc.strerror or exc)


def _parse(line: bytes) -> Submitted | None:
    if len(line) > LINE_LIMIT:
        return None
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    fields = ("job_id", "job_dir", "submitted", "job_name")
    if not all(isinstance(data.get(k), str) and data[k] for k in fields):
        return None
    cluster, remote = data.get("cluster"), data.get("remote")
    return Submitted(job_id=data["job_id"], job_dir=data["job_dir"], submitted=data["submitted"],
                     job_name=data["job_name"], cluster=cluster if isinstance(cluster, str) else None,
                     remote=remote if isinstance(remote, str) else None)


def read_index(environ: Mapping[str, str] | None = None, *,
               limit: int = INDEX_READ_BYTES) -> Iterator[Submitted]:
    """The index's records, newest first, from its last ``limit`` bytes; damaged lines are skipped."""
    path = index_path(environ)
    try:
        with open_regular(path) as fh:
            size = fh.seek(0, os.SEEK_END)
            start = max(0, size - limit)
            fh.seek(start)
            data = fh.read(limit)
    except OSError:
        return
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first line was cut by the bound
    for line in reversed(lines):
        if line.strip():
            found = _parse(line.strip())
            if found is not None:
                yield found


def lookup(job_id: str, environ: Mapping[str, str] | None = None) -> list[Submitted]:
    """The index's records of ``job_id``, newest first (ids restart: there may be several)."""
    return [r for r in read_index(environ) if r.job_id == job_id]


def read_submitted(job_dir: Path) -> Submitted | None:
    """The folder's ``submitted.json`` (None: missing or damaged, e.g. a folder from before it existed)."""
    try:
        with open_regular(job_dir / SUBMITTED_FILE) as fh:  # a FIFO or a device is never read
            raw = fh.read(LINE_LIMIT)
    except OSError:
        return None
    return _parse(raw.replace(b"\n", b" "))


def parse_time(text: str | None) -> float | None:
    """Seconds since the epoch of an ISO 8601 time; a naive one (Slurm's ``2026-11-25T13:04:05``) is
    local time. None for Slurm's blanks (``Unknown``, ``N/A``, ``None``) or anything unreadable."""
    if not text:
        return None
    value = text.strip()
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(value.replace(" ", "T", 1))
    except ValueError:
        return None
    try:
        return moment.timestamp()  # naive: local time, as datetime.timestamp() reads it
    except (OverflowError, OSError, ValueError):  # a TZ the C library cannot apply
        return None


def same_submit(slurm_submit: str | None, recorded: str | None, *, created: bool = False,
                requeued: bool = False) -> bool | None:
    """Does Slurm's SubmitTime fit the time orch recorded? None when either is unknown. ``created``:
    ``recorded`` is job.json's creation time (before sbatch), so it may be earlier by more.
    ``requeued`` (Slurm counts restarts): Slurm resets SubmitTime to the requeue, so any later time fits."""
    slurm_at, ours = parse_time(slurm_submit), parse_time(recorded)
    if slurm_at is None or ours is None:
        return None
    after = slurm_at - ours  # how much later Slurm's SubmitTime is than orch's record
    low, high = (-SLACK_BEFORE, CREATED_SLACK_AFTER) if created else (-SLACK_AFTER, SLACK_BEFORE)
    return low <= after and (requeued or after <= high)
