"""``orch logs``'s reading of a job's logs: which logs a call shows (:class:`Logs`, over
:mod:`orchestrator.records.logs.view`), whether the job has ended (the tense of a note; when following stops),
the notes beside a log (where training is, an empty or absent log, the rank to look at), the errors for a log
that is not there, and the bounded tails of ``orch mcp``'s logs tool (:func:`tails`).

The logs live in the job folder (``logs/slurm-<id>.out`` for the batch step, ``logs/<id>-rank<R>.out``
per rank; ``logs/local-rank<R>.out`` for ``orch run``); a job id is found in the user's index of
submitted jobs first, so the submit's ``--cluster`` is not needed. When the ranks' outcome records show
a failure, :func:`blame_note` names the rank to look at and why (:func:`orchestrator.slurm.jobstate.failure`:
under Slurm with srun's report or attempts.json's verdict, and the rank's node), with the last lines of that
rank's log. When Slurm's job of this id is another job (the id was reused), the job has ended for a follower.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import ConfigError, OrchError, SlurmError
from orchestrator.records.jobdirs import JobDir
from orchestrator.records.joblayout import log_path
from orchestrator.records.logs.view import Source, View, rank_logs, tail_lines
from orchestrator.records.training import progress_cells, read_progress, read_result
from orchestrator.service.jobs import Scope, chosen_cluster_name, find_job, locate
from orchestrator.slurm import jobstate
from orchestrator.slurm import queries as slurm
from orchestrator.spec.bounds import BOUNDS
from orchestrator.spec.runconfig import LOG_DIR
from orchestrator.spec.safefile import open_regular
from orchestrator.task.hang import for_terminal

__all__ = ["ALL_SHOWN", "Logs", "blame_note", "check_interval", "finished", "follow_ended", "make_view",
           "missing_error", "nothing_notes", "open_logs", "progress_note", "tails"]

TAIL_LINES = 20  # of the rank to look at, below the log shown
ALL_SHOWN = -1  # blame_note's ``shown`` when every rank's log was shown


@dataclass(frozen=True)
class Logs:
    """What ``orch logs`` shows of one job: the view (which logs, how many lines), how the id asked for led to
    the folder's job (``followed``: it ran before it; None: as asked), and the cluster file the user chose
    (``scope``: its name judges Slurm's answers about the job)."""

    view: View
    followed: str | None
    scope: Scope

    @property
    def job(self) -> JobDir:
        return self.view.job

    def cluster(self) -> str | None:
        """The name of the cluster file the user chose (None: none chosen)."""
        return chosen_cluster_name(self.scope)

    def present(self) -> list[Source]:
        """The view's logs that exist now."""
        return [s for s in self.view.sources() if s.path.is_file()]

    def shown_rank(self) -> int | None:
        """The rank whose log the view shows (:data:`ALL_SHOWN`: all of them; None: the batch log alone)."""
        return {"batch": None, "all": ALL_SHOWN}.get(self.view.mode, self.view.rank or 0)


def check_interval(interval: float) -> None:
    """``--interval``: finite, no busy loop, no endless sleep (orchestrator.spec.bounds)."""
    problem = BOUNDS["interval"].problem(interval)
    if problem is not None:
        raise ConfigError(f"--interval {interval} {problem}", hint="e.g. --interval 0.5 (the default) or --interval 5")


def make_view(job: JobDir, *, batch: bool = False, rank: int | None = None, all_ranks: bool = False,
              lines: int = 1000) -> View:
    """The view of ``job``'s logs that ``--batch``, ``--rank R``, ``--all-ranks`` and ``--lines N`` ask for."""
    if lines < 0:
        raise OrchError(f"--lines {lines} must be 0 or more", hint="e.g. --lines 200")
    if rank is not None and rank < 0:
        raise OrchError(f"--rank {rank} must be 0 or more", hint="ranks count from 0")
    mode = "batch" if batch else "rank" if rank is not None else "all" if all_ranks else "default"
    if job.mode == "local" and mode == "batch":
        raise OrchError(f"{job.path} is a local run (orch run): it has no batch log",
                        hint=f"orch logs {job.path} shows rank 0's log; --rank R or --all-ranks the others")
    if job.mode == "slurm":
        job.queued_id()  # a folder sbatch refused: say why
    return View(job=job, mode=mode, rank=rank, lines=lines)


def open_logs(ref: str, scope: Scope, *, batch: bool = False, rank: int | None = None, all_ranks: bool = False,
              lines: int = 1000) -> Logs:
    """The logs of the job ``ref`` names (an id or a folder; an id is looked up in the index first), as
    :func:`make_view` shows them."""
    found = locate(ref, scope)
    view = make_view(found.job, batch=batch, rank=rank, all_ranks=all_ranks, lines=lines)
    return Logs(view, found.followed, scope)


def progress_note(job: JobDir) -> str | None:
    """What rank 0 last reported in progress.json, as a line (when the log says nothing yet)."""
    cells = progress_cells(read_progress(job.path))
    if cells["epoch"] is None:
        return None
    return (f"orch: rank 0 is at epoch {cells['epoch']}, step {cells['step']}, loss {cells['loss'] or '-'} "
            f"(from {job.path / 'progress.json'})")


def blame_note(job: JobDir, shown: int | None) -> str | None:
    """Which rank to look at, and why, when the outcome records show a failure; with the last lines
    of that rank's log unless it is the log just shown."""
    found = jobstate.failure(job)
    if found is None or not found.ranks:
        return None
    rank = found.ranks[0]
    note = f"orch: look at rank {rank}: {found.message}" + (f" (rank {rank} ran on {found.node})" if found.node else "")
    if shown in (rank, ALL_SHOWN):
        return note
    try:
        path = job.log_file(rank)
    except OrchError:
        return note
    last, _, _ = tail_lines(path, TAIL_LINES * 10, max_bytes=1 << 20)
    if not last:
        return note
    # as orch run shows a stuck rank: its stack without orch's launcher frames, so the script's own are in view
    kept = for_terminal(b"".join(last).decode("utf-8", errors="replace")).rstrip("\n").splitlines()
    lines = "\n".join(kept[-TAIL_LINES:])
    ref = job.job_id or job.path
    return note + f"\n--- last lines of {path} (orch logs {ref} --rank {rank}) ---\n" + lines + "\n---"


def _missing(job: JobDir, path: Path, rank: int | None, ended: bool = False) -> OrchError:
    ranks = sorted(p.name for p in rank_logs(job).values())
    if rank is not None and ranks:
        return OrchError(f"no log for rank {rank}: {path} does not exist",
                         hint=f"rank logs in {job.path / LOG_DIR}: {', '.join(ranks)}")
    if ended:
        return OrchError(f"{path} does not exist: the {'job' if job.mode == 'slurm' else 'run'} ended without it",
                         hint=f"orch status {job.job_id or job.path} says how it ended")
    when = "when the job starts" if job.mode == "slurm" else "when the run starts"
    return OrchError(f"{path} does not exist yet",
                     hint=f"Slurm creates it {when} (orch status {job.job_id or job.path})")


def missing_error(view: View, *, ended: bool = False) -> OrchError:
    """No log to show; ``ended``: the job is over, so none will come (else: not yet)."""
    status = f"orch status {view.job.job_id or view.job.path}"
    if view.mode == "all":
        if ended:
            return OrchError(f"no rank logs in {view.job.path / LOG_DIR}: the job ended before any rank wrote one",
                             hint=f"the batch log may say why: orch logs {view.job.job_id or view.job.path} --batch")
        return OrchError(f"no rank logs in {view.job.path / LOG_DIR} yet",
                         hint=f"the ranks create them when the job starts ({status})")
    if view.mode == "rank":
        return _missing(view.job, view.rank_path(view.rank or 0), view.rank, ended)
    path = view.batch_path() if view.mode == "batch" else view.rank_path(0)
    return _missing(view.job, path or view.rank_path(0), None, ended)


def follow_ended(job: JobDir, cluster: str | None) -> tuple[bool, str | None]:
    """Has the run finished (following stops)? Slurm jobs: squeue says terminal, no longer knows the job, or knows
    another job under its id; then the note to say so. A slow controller is no reason to stop following."""
    if job.mode != "slurm" or job.job_id is None:
        return read_result(job.path) is not None, None
    try:
        found = slurm.squeue([job.job_id]).get(job.job_id)
    except SlurmError:
        return False, None
    if jobstate.reused(job, found, cluster) is not None:
        return True, (f"orch: job id {job.job_id} was reused: Slurm's job {job.job_id} is not this folder's job "
                      "(it has ended)")
    return found is None or found.terminal, None


def finished(job: JobDir, cluster: str | None) -> bool:
    """Has the job ended (the tense of a note on an empty or absent log)? A local run: its records say; a Slurm
    job: squeue says terminal, or no longer knows it, or knows another job under its id. Not known: no."""
    if job.mode != "slurm" or job.job_id is None:
        return bool(jobstate.describe(None, job, None)["terminal"])
    try:
        found = slurm.squeue([job.job_id]).get(job.job_id)
    except SlurmError:
        return False
    return found is None or found.terminal or jobstate.reused(job, found, cluster) is not None


# what an empty log says, by view: (while the job runs, once it has ended)
EMPTY_WORDS: dict[str, tuple[str, str]] = {
    "batch": ("the batch shell has written nothing yet", "the batch shell wrote nothing (its log is empty)"),
    "rank": ("rank {rank} has written nothing yet", "rank {rank} wrote nothing (its log is empty)"),
    "all": ("the ranks have written nothing yet", "the ranks wrote nothing (their logs are empty)"),
    "default": ("rank 0 has written nothing yet", "rank 0 wrote nothing (its log is empty)"),
}


def _empty_words(view: View, ended: bool) -> str:
    running, done = EMPTY_WORDS.get(view.mode, EMPTY_WORDS["default"])
    return (done if ended else running).format(rank=view.rank)


def nothing_notes(view: View, written: int, ended: bool) -> list[str]:
    """The notes on a log that showed nothing, and on rank 0's absent log (the batch log's lines shown), in the
    tense of the job: ``ended`` (it wrote nothing), else running (nothing yet, and where training is)."""
    notes = []
    if written == 0:
        notes.append(f"orch: {_empty_words(view, ended)}")
        note = progress_note(view.job) if not ended else None
        if note is not None:
            notes.append(note)  # what is happening meanwhile
    if view.mode == "default" and not view.rank_path(0).is_file():
        notes.append(f"orch: rank 0's log {view.rank_path(0)} does not exist{'' if ended else ' yet'}")
    return notes


def tails(ref: str, scope: Scope, *, rank: int | None = None, batch: bool = False, all_ranks: bool = False,
          first_rank: int = 0, lines: int = 200, max_bytes: int = 65536, max_ranks: int = 64) -> dict[str, Any]:
    """The end of a job's logs, each on its own: ``{"logs": [{"source", "path", "lines", "truncated", "size"}]}``
    (at most ``lines`` lines and ``max_bytes`` bytes of each; with ``all_ranks``, ``max_ranks`` rank logs from
    ``first_rank``, ``more_ranks_from`` the next); default: the batch log and rank 0's; ``failure``: the rank to
    look at, when the job failed."""
    folder = find_job(ref, scope)
    view = make_view(folder, batch=batch, rank=rank, all_ranks=all_ranks, lines=lines)
    if view.mode == "all":
        found = [(r, p) for r, p in rank_logs(folder).items() if r >= first_rank]
        named = [(f"rank {r}", p) for r, p in found[:max_ranks]]
        later = [r for r, _ in found[max_ranks:]]
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


def log_file(job_dir: Path, job_id: str | None, rank: int | None = 0) -> Path:
    """Where one rank's log is (``rank=None``: the batch log; ``job_id`` None: a local run's names)."""
    return log_path(job_dir, job_id, rank)


def log_text(path: Path) -> str:
    """The text of a log (empty before it exists); a FIFO or a device under its name is never read."""
    try:
        with open_regular(path) as fh:
            return fh.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
