"""Never an untracked job: what happens between ``sbatch`` queueing a job and orch recording its id.

* Before sbatch, every file that can be written is written, and ``job_id`` is already there, filled
  with blanks (:func:`reserve_id`, read as "no id yet"): recording the id then rewrites bytes the file
  already holds (:func:`record_id`), which needs no free space, so a disk that fills up while sbatch
  runs cannot lose the id.
* SIGINT, SIGTERM and SIGHUP are held back (:func:`deferred_signals`) from just before sbatch until the
  id is recorded, then delivered: Ctrl-C, a ``kill`` or a closed terminal stop orch after the job is
  tracked, never between. (sbatch inherits the blocked signals: a Ctrl-C cannot kill it half-way.)
* SIGKILL cannot be held back. Before sbatch, the folder records a token (``submit_token``,
  :func:`write_token`: ``orch:<folder name>``) that sbatch gives the job as its ``--comment``. A folder
  whose ``job_id`` is still blank is reconciled the next time orch reads it (:func:`reconcile`: ``orch
  status``, ``list``, ``cancel``, ``logs``): one squeue call lists the user's jobs by comment, and the id of
  the job carrying the token is recorded (:func:`record_ids`, the one writer), an array's elements too,
  and each folder gets the records a whole submit writes after sbatch (:func:`record_submitted`:
  ``submitted.json`` and the user's index), with Slurm's SubmitTime as the time of submission.
  The batch script also records its own id when it starts (``templates/base.sbatch.j2``). A job Slurm
  no longer holds stays without an id: ``orch status`` says UNKNOWN and why (:func:`interrupted`).
* When recording fails all the same (the folder was removed, a read-only remount), orch cancels the job
  it just queued (:func:`untracked`) and exits non-zero; if scancel fails too, the error names the id and
  the command that cancels it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import stat
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

from orchestrator.errors import OrchError, SlurmError
from orchestrator.records.jobindex import Submitted, parse_time, record_submit
from orchestrator.records.joblayout import ARRAY_FILE
from orchestrator.spec.runconfig import (
    JOB_ID_FILE,
    SUBMIT_ERROR_FILE,
    SUBMIT_TOKEN_FILE,
    RunConfig,
    read_run_config,
)

log = logging.getLogger(__name__)

DEFERRED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
ID_RESERVE = 64  # bytes of blanks in job_id before sbatch: longer than any id ("<array id>_<index>")
_FILE_MODE = 0o600


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP back while the block runs; delivered (as usual) when it ends."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield  # signals go to the main thread's handlers anyway; nothing to hold back here
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, DEFERRED_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextlib.contextmanager
def private_umask() -> Iterator[None]:
    """umask 077 while sbatch runs: sbatch hands it to the job (SLURM_UMASK), so the batch log that
    slurmd creates before the script starts is the user's alone."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def _write_new(path: Path, data: bytes) -> None:
    """A new file of the job folder, mode ``_FILE_MODE`` exactly whatever the umask, on disk before sbatch."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), _FILE_MODE)
    try:
        os.fchmod(fd, _FILE_MODE)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def reserve_id(job_dir: Path) -> None:
    """``job_id`` of blanks (no id yet), written before sbatch. Raises OSError (nothing queued yet)."""
    _write_new(job_dir / JOB_ID_FILE, b" " * (ID_RESERVE - 1) + b"\n")


def record_id(job_dir: Path, job_id: str) -> None:
    """Write ``job_id`` over the blanks :func:`reserve_id` left (no new space needed). Raises OSError."""
    data = (job_id + "\n").encode("ascii")
    path = job_dir / JOB_ID_FILE
    try:
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0))  # never created here: reserved before
    except FileNotFoundError:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), _FILE_MODE)
    try:
        if len(data) > ID_RESERVE:
            os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)


def record_ids(pairs: Sequence[tuple[Path, str]]) -> None:
    """Record each (folder, id); the first failure cancels the whole submission (:func:`untracked`).
    A signal held back meanwhile is announced (it stops orch once the ids are recorded)."""
    for job_dir, job_id in pairs:
        try:
            record_id(job_dir, job_id)
        except OSError as exc:
            raise untracked(pairs[0][1], job_dir, exc) from None
    pending = signal.sigpending() & set(DEFERRED_SIGNALS) if hasattr(signal, "sigpending") else set()
    if pending and pairs:
        names = ", ".join(sorted(signal.Signals(s).name for s in pending))
        log.warning("job %s is queued and its id recorded in %s; stopping now on %s",
                    pairs[0][1], pairs[0][0], names)


def record_submitted(job_dir: Path, job_id: str, config: RunConfig, submitted: str) -> None:
    """What a folder records once its job is queued and its id recorded: ``submitted.json`` and the user's
    index of submitted jobs (:mod:`orchestrator.records.jobindex`; best effort). ``submitted``: ISO 8601, UTC."""
    record_submit(job_dir, Submitted(job_id=job_id, job_dir=str(job_dir), submitted=submitted,
                                     job_name=config.job_name, cluster=config.cluster_name))


def untracked(job_id: str, job_dir: Path, exc: OSError) -> SlurmError:
    """Cancel job ``job_id``, whose id orch could not record; the error to raise (exit 1)."""
    from orchestrator.slurm import client as slurm

    reason = exc.strerror or type(exc).__name__
    try:
        slurm.scancel([job_id])
    except Exception as cancel_exc:  # any failure: the user must cancel it by hand
        log.debug("scancel %s failed: %s", job_id, cancel_exc)
        return SlurmError(f"sbatch queued job {job_id}, but orch could not record its id in {job_dir} ({reason}) "
                          "and could not cancel it either: the job is queued without a folder that knows it",
                          hint=f"cancel it: scancel {job_id} (then free space or fix {job_dir.parent} and "
                               "submit again)")
    return SlurmError(f"sbatch queued job {job_id}, but orch could not record its id in {job_dir} ({reason}); "
                      f"job {job_id} was cancelled, so nothing runs untracked",
                      hint=f"free space or fix {job_dir.parent} (launcher.job_root), then submit again")


# --- a submit that died after sbatch: find the job by its token ----------------------------------

TOKEN_PREFIX = "orch:"


def write_token(job_dir: Path, extra: Mapping[str, str | None]) -> str:
    """Record the token before sbatch; the ``--comment`` to give sbatch (``extra``: the sbatch options,
    whose ``comment``, when the user gave one, follows the token: the command line's wins over the
    script's, and squeue's first word is then still the token). Raises OSError (nothing queued yet)."""
    token = TOKEN_PREFIX + job_dir.name
    _write_new(job_dir / SUBMIT_TOKEN_FILE, (token + "\n").encode("utf-8", "surrogateescape"))
    theirs = (extra.get("comment") or "").strip()
    return f"{token} {theirs}" if theirs else token


def read_token(job_dir: Path) -> str | None:
    """The token of a folder whose submit may have died after sbatch: ``job_id`` blank (reserved, never
    filled), sbatch not refused; None otherwise."""
    if os.path.lexists(job_dir / SUBMIT_ERROR_FILE) or not _blank(job_dir):
        return None
    data = _head(job_dir / SUBMIT_TOKEN_FILE, 1024)
    text = data.decode("utf-8", "surrogateescape").strip() if data is not None else ""
    return text if text.startswith(TOKEN_PREFIX) else None


def interrupted(job_dir: Path) -> str | None:
    """Why a folder has no job id although sbatch may have queued it (UNKNOWN's reason), else None."""
    token = read_token(job_dir)
    if token is None:
        return None
    return (f"orch submit was stopped before it recorded the id, and Slurm holds no job of comment {token} "
            f"(it never ran, or finished long ago): orch logs {job_dir} shows what it wrote; submit it again to run it")


def _owner(job_dir: Path) -> Path:
    """The folder that sbatch queued: an array element's is the array's folder (its parent)."""
    return job_dir.parent if (job_dir.parent / ARRAY_FILE).is_file() and job_dir.name.isdigit() else job_dir


def reconcile(job_dirs: Iterable[Path]) -> dict[Path, str]:
    """Record the id of every job queued for these folders whose submit died before recording it (one
    squeue call, only when some folder needs it); {folder: id recorded}. Slurm's refusal to answer is a
    SlurmError; a failure to record is logged (the folder stays as it was)."""
    from orchestrator.slurm import queries as slurm

    owners = {owner: token for owner in dict.fromkeys(_owner(p) for p in job_dirs)
              if (token := read_token(owner)) is not None}
    if not owners:
        return {}
    by_word = {comment.split()[0]: found for comment, found in slurm.comments().items()}
    recorded: dict[Path, str] = {}
    for owner, token in owners.items():
        if token not in by_word:
            continue
        job_id, submit_time = by_word[token]
        pairs = [(owner, job_id), *((e, f"{job_id}_{e.name}") for e in _elements(owner))]
        try:
            for folder, element_id in pairs:
                record_id(folder, element_id)
                recorded[folder] = element_id
        except OSError as exc:
            log.warning("cannot record job %s in %s: %s", job_id, owner, exc.strerror)
            continue
        for folder, element_id in pairs:
            _complete(folder, element_id, submit_time)
    return recorded


def _complete(folder: Path, job_id: str, slurm_submit: str) -> None:
    """The records a submit writes after sbatch, for a folder whose id was recorded only now (a folder
    with a job.json: a job, an array's element; an array's own folder has none, as after a submit)."""
    if (folder / ARRAY_FILE).is_file():
        return
    moment = parse_time(slurm_submit)  # Slurm's local time: when the job was queued
    if moment is None:
        log.warning("no submitted.json for job %s in %s: Slurm gave no SubmitTime (%r)", job_id, folder,
                    slurm_submit[:40])
        return
    try:
        config = read_run_config(folder)
    except OrchError as exc:
        log.warning("no submitted.json for job %s: %s", job_id, exc.message)
        return
    submitted = datetime.fromtimestamp(moment, timezone.utc).isoformat(timespec="seconds")
    record_submitted(folder, job_id, config, submitted)


def _elements(owner: Path) -> list[Path]:
    """An array folder's element folders that still wait for their id."""
    if not (owner / ARRAY_FILE).is_file():
        return []
    return sorted((p for p in owner.iterdir() if p.name.isdigit() and _blank(p)), key=lambda p: int(p.name))


def _blank(job_dir: Path) -> bool:
    """``job_id`` holds only the blanks :func:`reserve_id` wrote (no id yet)."""
    data = _head(job_dir / JOB_ID_FILE, ID_RESERVE + 1)
    return data is not None and not data.strip()


def _head(path: Path, limit: int) -> bytes | None:
    """The first ``limit`` bytes of a regular file (never a FIFO, a device or a link's target); None else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        return os.read(fd, limit) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:
        return None
    finally:
        os.close(fd)
