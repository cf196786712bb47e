"""A memory of bad nodes across jobs: ``<job root>/bad_nodes.jsonl``, one per cluster.

Each line is one JSON object: a piece of evidence against a node::

    {"node": "node7", "kind": "hang", "job_id": "1234", "time": "2026-11-25T16:40:00Z", "ts": 1795...}

or a ``forget`` line (``orch nodes --forget``), which cancels every earlier line of its node (``"*"``:
of every node)::

    {"forget": "node7", "time": "2026-11-25T17:00:00Z", "ts": 1795...}

The file is only ever appended to, each line by one ``write`` on a descriptor opened with
``O_APPEND``: the kernel places every write at the end of the file at once, so several jobs (batch
scripts, ``orch nodes --forget``) writing at the same time never tear or lose a line (a POSIX lock
around the write covers NFS, whose clients do not make ``O_APPEND`` atomic). Forgetting is
a line too, so no writer ever rewrites the file. Readers skip lines that are not records (noted, never
an error) and read at most ``MAX_READ`` bytes from the end.

A node is *active* (left out by ``orch submit``) while its newest evidence, not forgotten since, is
younger than ``launcher.bad_node_ttl`` seconds. The kinds of evidence are the table ``KINDS``; a
Python exception in user code is never evidence against a node (``records.restarts.nodeevidence`` decides).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import stat
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from orchestrator.errors import ConfigError
from orchestrator.spec.safefile import open_regular

FILE = "bad_nodes.jsonl"
# A job-root record, as the snapshot manifests: group-readable (a team may share a job root), never
# group/other-writable; the files in a job folder are 0600.
MODE = 0o640
MAX_LINE = 4096  # bytes; a record is far smaller (one write of it is one append)
MAX_READ = 8 << 20  # bytes read from the end of the file
ALL = "*"
KINDS: dict[str, str] = {
    "hang": "a rank on it stopped making progress (blamed for a hang)",
    "signal": "a rank on it died by a signal (killed, out of memory, node lost)",
    "nccl_cuda": "a rank on it reported an NCCL or CUDA error",
    "preflight": "it failed the preflight checks",
    "not_started": "a task on it never started",
}
_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")


@dataclass(frozen=True)
class BadNode:
    """A node's newest evidence (``count``: its pieces of evidence within the ttl)."""

    node: str
    kind: str
    job_id: str
    ts: float
    count: int = 1

    @property
    def time(self) -> str:
        return utc_text(self.ts)

    @property
    def reason(self) -> str:
        return KINDS.get(self.kind, self.kind)

    def as_dict(self) -> dict[str, Any]:
        return {"node": self.node, "kind": self.kind, "reason": self.reason, "job_id": self.job_id,
                "time": self.time, "ts": self.ts, "count": self.count}


def path(job_root: Path) -> Path:
    return Path(job_root).expanduser() / FILE


def utc_text(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_node(node: str) -> str:
    """A node name as Slurm writes one (no list, no spaces), or a UsageError."""
    if not isinstance(node, str) or not _NODE.fullmatch(node):
        raise ConfigError(f"{node!r} is not a node name", hint="one node as Slurm names it, e.g. node7")
    return node


def _append(job_root: Path, entry: dict[str, Any]) -> None:
    """One line, one ``write`` with ``O_APPEND`` (never torn, never interleaved with another writer's)."""
    data = (json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n").encode()
    if len(data) > MAX_LINE:
        raise ConfigError(f"a bad-node record of {len(data)} bytes is longer than {MAX_LINE}",
                         hint="the job id or node name is too long")
    target = path(job_root)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0),
                     MODE)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or a device planted in the job root
                raise OSError(errno.EINVAL, "not a regular file")
            os.set_blocking(fd, True)
            _lock(fd)  # belt and braces where O_APPEND alone is not atomic (NFS clients)
            written = os.write(fd, data)
        finally:
            os.close(fd)  # releases the lock
    except OSError as exc:
        raise ConfigError(f"cannot append to {target}: {exc.strerror or exc}",
                          hint="the job root (launcher.job_root) must be writable") from None
    if written != len(data):  # a full disk: the reader skips the short line
        raise ConfigError(f"{target}: only {written} of {len(data)} bytes written", hint="is the disk full?")


def _lock(fd: int) -> None:
    """An exclusive POSIX lock on the whole file (lockd serves it over NFS); none where locks fail."""
    with contextlib.suppress(OSError):
        fcntl.lockf(fd, fcntl.LOCK_EX)


def record(job_root: Path, node: str, kind: str, job_id: str, now: float | None = None) -> None:
    """Append one piece of evidence against ``node`` (``kind`` from ``KINDS``) found in job ``job_id``."""
    if kind not in KINDS:
        raise ConfigError(f"{kind!r} is not a kind of evidence against a node",
                         hint=f"one of {', '.join(KINDS)}")
    ts = time.time() if now is None else now
    _append(job_root, {"node": check_node(node), "kind": kind, "job_id": str(job_id)[:200],
                       "time": utc_text(ts), "ts": ts})


def forget(job_root: Path, node: str | None, now: float | None = None) -> list[str]:
    """Forget ``node`` (None: every node); the nodes that were remembered (any age) and now are not."""
    target = ALL if node is None else check_node(node)
    known = sorted({n.node for n in active(job_root, float("inf"), now)})
    gone = known if target == ALL else [n for n in known if n == target]
    if gone:
        ts = time.time() if now is None else now
        _append(job_root, {"forget": target, "time": utc_text(ts), "ts": ts})
    return gone


def read(job_root: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The lines of the file in order, and a note per line that is not a record (never raises)."""
    target = path(job_root)
    try:
        with open_regular(target) as fh:  # a FIFO or a device never blocks or floods (spec/safefile)
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_READ:
                fh.seek(size - MAX_READ)
                fh.readline()  # the first line may start before the part read
            raw = fh.read(MAX_READ)
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], [f"{target}: cannot be read ({exc.strerror or exc})"]
    except ValueError:  # a NUL byte in the job root: no such file (the plan refuses the path itself)
        return [], []
    entries: list[dict[str, Any]] = []
    notes: list[str] = []
    for number, line in enumerate(raw.splitlines(), 1):
        entry = _parse(line)
        if entry is None:
            notes.append(f"{target}: line {number} is not a bad-node record; skipped")
        else:
            entries.append(entry)
    return entries, notes


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("ts"), (int, float)) or isinstance(entry["ts"], bool):
        return None
    if isinstance(entry.get("forget"), str):
        return entry
    if (isinstance(entry.get("node"), str) and _NODE.fullmatch(entry["node"]) and entry.get("kind") in KINDS
            and isinstance(entry.get("job_id"), str)):
        return entry
    return None


def active(job_root: Path, ttl_s: float, now: float | None = None) -> list[BadNode]:
    """The nodes with evidence younger than ``ttl_s`` seconds and not forgotten since, by name."""
    entries, _ = read(job_root)
    at = time.time() if now is None else now
    kept: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:  # file order is append order: a forget line cancels what came before it
        if "forget" in entry:
            if entry["forget"] == ALL:
                kept.clear()
            else:
                kept.pop(entry["forget"], None)
        elif at - float(entry["ts"]) < ttl_s:
            kept.setdefault(entry["node"], []).append(entry)
    out = []
    for node, pieces in sorted(kept.items()):
        newest = max(pieces, key=lambda e: float(e["ts"]))
        out.append(BadNode(node=node, kind=newest["kind"], job_id=newest["job_id"], ts=float(newest["ts"]),
                           count=len(pieces)))
    return out
