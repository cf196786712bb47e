"""Job folders found and read: one folder's records (:class:`JobDir`), a folder from what a user typed (a path or a
Slurm job id), every folder under a job root, newest first, read one at a time. The folders' names are
:mod:`orchestrator.records.joblayout`'s, their creation :mod:`orchestrator.records.jobcreate`'s. What a run wrote
about its training (metrics, progress, result) is read by :mod:`orchestrator.records.training`.
Nothing here runs Slurm: the verbs combine these records with :mod:`orchestrator.slurm.client`.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import OrchError
from orchestrator.records.joblayout import ARRAY_FILE, RAW_JOB_ID_FILE, STAMP_RE, log_path
from orchestrator.spec.numbers import check_path
from orchestrator.spec.runconfig import (
    JOB_FILE,
    JOB_ID_FILE,
    SUBMIT_ERROR_FILE,
    SUBMIT_TOKEN_FILE,
    RunConfig,
    read_run_config,
)
from orchestrator.spec.safefile import RECORD_LIMIT, note, read_json, read_text

log = logging.getLogger(__name__)

ID_FILE_LIMIT = 4096  # a job_id file holds one id and a newline
# "1234", an array element "1234_7" (or the whole array "1234_[0-3]" as sbatch never prints it)
_JOB_ID_RE = re.compile(r"[0-9]+(_[0-9]+)?")  # fullmatch, ASCII digits: "12\n" and "١٢" are no job ids


@dataclass(frozen=True)
class JobDir:
    """One job folder and what it records. ``config`` is None when job.json is missing or damaged."""

    path: Path
    config: RunConfig | None
    job_id: str | None
    submit_error: str | None
    raw_job_id: str | None = None  # array elements: the raw Slurm job id (the completion log's name for it)

    @property
    def name(self) -> str:
        return self.config.job_name if self.config else self.path.name

    @property
    def created(self) -> str:
        return self.config.created if self.config else ""

    @property
    def mode(self) -> str:
        return self.config.mode if self.config else "?"

    def log_file(self, rank: int | None = None) -> Path:
        """The batch log (``rank=None``) or one rank's log, as the templates and ``orch run`` name them."""
        job_id = None if self.mode == "local" else self.queued_id()
        return log_path(self.path, job_id, rank)

    def queued_id(self) -> str:
        """The Slurm job id; a folder that was never queued raises an error saying why."""
        if self.job_id is None:
            raise OrchError(f"job folder {self.path} has no job id: it was never queued",
                            hint=_not_queued_hint(self))
        return self.job_id


def _not_queued_hint(job: JobDir) -> str:
    if not job.submit_error and (job.path / JOB_ID_FILE).is_file():  # reserved before sbatch, never filled
        if (job.path / SUBMIT_TOKEN_FILE).is_file():  # orch looked for its job by the token: Slurm has none
            return ("orch submit stopped before it recorded the id (or sbatch failed), and Slurm holds no job "
                    f"whose --comment is this folder's {SUBMIT_TOKEN_FILE}: nothing of it is queued now")
        return ("orch submit stopped before it recorded the id (or sbatch failed): if Slurm queued the job, "
                "the job records its id here when it starts (see squeue --me)")
    if job.submit_error:
        reason = job.submit_error.strip().splitlines()[-1] if job.submit_error.strip() else "no message"
        return f"sbatch refused it: {reason} (details in {SUBMIT_ERROR_FILE})"
    return "submit it with orch submit"


def is_job_id(text: str) -> bool:
    return len(text) <= 40 and bool(_JOB_ID_RE.fullmatch(text))


def read_text_or_none(path: Path, limit: int = RECORD_LIMIT) -> str | None:
    """A record file's text; None when it is missing, not a regular file, too large or unreadable
    (:mod:`orchestrator.spec.safefile` warns)."""
    return read_text(path, limit)


def read_id(path: Path) -> str | None:
    """A ``job_id`` file's Slurm job id (ASCII digits, ``<array>_<index>``), or None: missing, not a
    regular file, or not a job id (warned: a damaged folder must not send its text to squeue)."""
    text = read_text_or_none(path, limit=ID_FILE_LIMIT)
    if text is None or not text.strip():
        return None
    job_id = text.strip()
    if not is_job_id(job_id):
        note(path, f"holds {job_id[:40]!r}, not a Slurm job id")
        return None
    return job_id


def read_job_dir(path: Path) -> JobDir:
    """Read one job folder; a damaged job.json gives ``config=None`` rather than an error."""
    try:
        config: RunConfig | None = read_run_config(path)
    except OrchError as exc:
        log.debug("%s", exc.message)
        config = None
    job_id = read_id(path / JOB_ID_FILE)
    raw_id = read_id(path / RAW_JOB_ID_FILE)
    return JobDir(path=path, config=config, job_id=job_id, submit_error=read_text_or_none(path / SUBMIT_ERROR_FILE),
                  raw_job_id=raw_id)


def iter_job_dirs(root: Path) -> Iterator[JobDir]:
    """Every job folder under ``root`` (and every element of an array folder there), newest first
    (by creation time, then folder name; an array's elements in index order), read one at a time:
    the order comes from the folders' names (the time stamp :func:`job_dir_path` puts there, the
    same ``now`` as job.json's ``created``), so ``orch status`` reads only the folders it shows.
    A folder whose name carries no stamp (renamed by hand) is placed by its job.json."""
    for path in iter_job_paths(root):
        yield read_job_dir(path)


def iter_job_paths(root: Path) -> Iterator[Path]:
    """The job folders of :func:`iter_job_dirs`, in its order, without reading them.

    Bounded for roots of 100,000 folders: one ``scandir`` of the root (names only: no stat of a
    folder whose name carries the stamp), one sort of (stamp, name) pairs, and each folder is
    looked at (job.json or array.json) only when the caller asks for the next one, so ``--limit N``
    touches about N folders. Memory: one short tuple per entry of the root."""
    try:
        entries = [entry.name for entry in os.scandir(root) if not entry.name.startswith(".")]  # .snapshots
    except OSError:
        return
    keyed: list[tuple[str, str]] = []
    for name in entries:
        match = STAMP_RE.search(name)
        if match:
            keyed.append((match.group(1) + match.group(2), name))
        elif _holds(root / name, JOB_FILE) or _holds(root / name, ARRAY_FILE):
            keyed.append((_stamp(root / name), name))  # renamed by hand: its job.json says when
    keyed.sort(reverse=True)
    others = 0
    for _, name in keyed:
        path = root / name
        if not may_read(path):
            others += 1
            continue
        if _holds(path, JOB_FILE):
            yield path
        elif _holds(path, ARRAY_FILE):
            try:
                indexes = sorted(int(p.name) for p in os.scandir(path)
                                 if p.name.isascii() and p.name.isdigit() and len(p.name) < 10)
            except OSError:
                continue
            yield from (p for p in (path / str(i) for i in indexes) if may_read(p) and _holds(p, JOB_FILE))
    if others:  # a job root shared with other users: their folders are theirs (docs/cluster-yaml.md, job_root)
        log.info("%d folder(s) under %s are other users' (you may not read them): left out", others, root)


def may_read(folder: Path) -> bool:
    """Whether this user may list and enter ``folder`` (another user's job folder in a shared job root: no)."""
    try:
        return os.access(folder, os.R_OK | os.X_OK)
    except ValueError:  # a path Python cannot pass to the system
        return False


def _holds(folder: Path, name: str) -> bool:
    """``folder/name`` is a file (False where it cannot be looked at: another user's folder)."""
    try:
        return (folder / name).is_file()
    except OSError:
        return False


def newest_with_id(root: Path, job_ids: Iterable[str]) -> dict[str, JobDir]:
    """The newest folder of each of ``job_ids``, reading only each folder's ``job_id`` file until
    all are found (then only the matches in full): ``orch status 123`` in a root of 100,000 folders."""
    wanted = set(job_ids)
    found: dict[str, tuple[str, int, Path]] = {}  # id -> (stamp, job_id's mtime in ns, folder)
    for path in iter_job_paths(root):
        stamp = _stamp(path if STAMP_RE.search(path.name) or path.parent == root else path.parent)
        if not wanted and all(stamp < seen for seen, _, _ in found.values()):
            break  # older than every match: none of its second left to compare
        job_id = read_id(path / JOB_ID_FILE)
        if job_id is None or (job_id not in wanted and found.get(job_id, ("",))[0] != stamp):
            continue
        # two folders of one id stamped in the same second (ids restart): the later sbatch answer wins
        written = _mtime_ns(path / JOB_ID_FILE)
        if job_id in wanted or written > found[job_id][1]:
            wanted.discard(job_id)
            found[job_id] = (stamp, written, path)
    return {job_id: read_job_dir(path) for job_id, (_, _, path) in found.items()}


def _mtime_ns(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def list_job_dirs(root: Path) -> list[JobDir]:
    """:func:`iter_job_dirs`, all of them."""
    return list(iter_job_dirs(root))


def _stamp(folder: Path) -> str:
    """``YYYYmmddHHMMSS`` of a job folder: from its name, else from its job.json's ``created``
    (an unreadable one sorts as the oldest)."""
    match = STAMP_RE.search(folder.name)
    if match:
        return match.group(1) + match.group(2)
    data = read_json(folder / JOB_FILE, dict)
    created = data.get("created", "") if data is not None else ""
    return re.sub(r"[^0-9]", "", created[:19]) if isinstance(created, str) else ""


def find_job_dir(ref: str, root: Path) -> JobDir:
    """A job folder from what a user typed: a folder path, or a Slurm job id (newest folder wins).

    Job ids restart when a cluster is rebuilt, so several folders can carry one id; the newest is
    the one a user means.
    """
    as_path = Path(check_path(ref, "JOB")).expanduser()
    if (as_path / JOB_FILE).is_file():
        return read_job_dir(as_path.resolve())
    if (as_path / ARRAY_FILE).is_file():
        raise OrchError(f"{ref} is the folder of a job array: each element has a job folder of its own",
                        hint=f"pass an element's folder ({as_path / '0'}) or id (<array id>_0); "
                             "orch cancel <array id> cancels every element")
    if is_job_id(ref):
        match = newest_with_id(root, [ref]).get(ref)  # newest first: stops at the first match
        if match is not None:
            return match
        raise OrchError(f"no job folder under {root} has job id {ref}",
                        hint="pass the job folder instead, or the --cluster whose launcher.job_root holds it "
                             "(orch list shows the jobs submitted from here)")
    raise OrchError(f"{ref!r} is neither a job id nor a job folder (no {JOB_FILE} in it)",
                    hint="pass a Slurm job id such as 1234 or the folder that orch submit printed")
