"""``orch top``'s model: one :class:`JobRow` per job submitted from here, refreshed cheaply and often, and the
:class:`~orchestrator.service.detail.Detail` of a selected one (:meth:`Board.detail`). Plain data: what shows
is :mod:`orchestrator.views`'.

The rows say what ``orch status`` says (the state from :func:`orchestrator.slurm.jobstate.describe`, the
blamed rank from :func:`orchestrator.slurm.jobstate.failure`, progress from ``progress.json``, restarts
and the goodput ledger from ``attempts.json`` / ``result.json``), read so that a refresh costs next to
nothing when nothing changed (:mod:`orchestrator.records.live`):

- the job folders are listed again only when the job root (or an array's folder) changed, or every
  :data:`RELIST_S` seconds (a folder whose ``job.json`` was not written yet when it was listed);
- each folder is looked at with a few ``stat`` calls (:meth:`Board._gate`: the folder, ``logs/``, the
  in-place ``job_id``, and for a job not yet ended the files appended to); a row is built again only
  when one of them, or Slurm's answer, changed; building it re-reads only the files whose stamp changed
  (``metrics.jsonl`` and ``steps.jsonl`` from the offset read last);
- Slurm is asked at most every ``slurm_every`` seconds, in one batched call for every job that has not
  ended (:func:`orchestrator.slurm.queries.job_status`; a job Slurm called ended is not asked again).

Jobs submitted to remote clusters are rows from the index only (``orch list``'s remote rows).
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.errors import SlurmError
from orchestrator.records.jobdirs import JobDir, iter_job_paths, read_job_dir
from orchestrator.records.jobindex import SUBMITTED_FILE, index_path
from orchestrator.records.joblayout import ARRAY_FILE, RAW_JOB_ID_FILE, log_path
from orchestrator.records.live import JsonlTail, Memo, Stamp, stamp, stamps
from orchestrator.records.restarts.attempts import ATTEMPTS_FILE, ledger, read_attempts, restarts_shown
from orchestrator.records.training import progress_cells, read_progress, read_result
from orchestrator.remote.forward import remote_rows
from orchestrator.service.detail import Detail, read_detail
from orchestrator.slurm import jobstate
from orchestrator.slurm.client import Runner, run_command
from orchestrator.slurm.queries import job_status as slurm_job_status
from orchestrator.slurm.state import JobStatus
from orchestrator.spec.numbers import to_float, to_int
from orchestrator.spec.runconfig import (
    JOB_FILE,
    JOB_ID_FILE,
    LOG_DIR,
    METRICS_FILE,
    PREFLIGHT_RECORD_FILE,
    PROGRESS_FILE,
    RESULT_FILE,
    SUBMIT_ERROR_FILE,
    SUBMIT_TOKEN_FILE,
)
from orchestrator.spec.tracking import STEPS_FILE

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 200  # jobs shown without --limit (orch list's)
SLURM_EVERY_S = 5.0  # at most one batched Slurm query this often
RELIST_S = 10.0  # the job root is listed again at least this often
TREND_POINTS = 24  # the loss points a sparkline shows
TREND_KEY = "train/loss"  # steps.jsonl's loss (runtime/tracking.py)
IDENTITY_FILES = (JOB_FILE, JOB_ID_FILE, RAW_JOB_ID_FILE, SUBMIT_ERROR_FILE)  # what read_job_dir reads
# what jobstate.describe reads of a folder (besides the identity files)
STATE_FILES = (*IDENTITY_FILES, RESULT_FILE, ATTEMPTS_FILE, SUBMITTED_FILE, SUBMIT_TOKEN_FILE, PREFLIGHT_RECORD_FILE)


@dataclass(frozen=True)
class JobRow:
    """What ``orch top`` shows of one job (the cells are formatted by :mod:`orchestrator.views.cells`)."""

    key: str  # the job folder (a remote job: cluster:folder): the row's identity across refreshes
    name: str
    job_id: str | None
    mode: str  # slurm, local, remote
    state: str  # Slurm's name (orch status's), REMOTE for a job on a remote cluster
    terminal: bool
    nodes: str | None = None
    elapsed: str | None = None
    epoch: str | None = None  # "2/10"
    step: str | None = None  # "120/469"
    done: float | None = None  # share of the whole run (0..1)
    eta: str | None = None
    loss: float | None = None
    trend: tuple[float, ...] = ()
    rate: str | None = None  # samples/s over all ranks
    restarts: str | None = None  # in-job restarts + requeues (1+0)
    goodput: float | None = None
    failure: Mapping[str, Any] | None = None  # Blame.as_dict(): rank, node, message
    reason: str | None = None
    job_dir: Path | None = None
    preempt_signal: str | None = None  # the job's launcher.preempt_signal (checkpoint and requeue)

    @property
    def blamed(self) -> str | None:
        """``rank 1 @ node2`` (or ``rank 1``) when a failure names a rank."""
        if not self.failure or self.failure.get("rank") is None:
            return None
        node = self.failure.get("node")
        return f"rank {self.failure['rank']}" + (f" @ {node}" if node else "")


@dataclass
class _Seen:
    gate: tuple[Stamp | None, ...]
    status: JobStatus | None
    row: JobRow
    job: JobDir


@dataclass
class Board:
    """The rows of the jobs under ``root``; :meth:`refresh` reads what changed since the last call."""

    root: Path
    cluster: str | None = None  # the name of the cluster.yaml in use (job ids reused: jobstate.reused)
    limit: int = DEFAULT_LIMIT  # 0: every folder
    slurm_every: float = SLURM_EVERY_S
    runner: Runner = run_command
    clock: Callable[[], float] = time.monotonic
    remote: bool = True  # add the jobs submitted to remote clusters (the index)
    memo: Memo[Any] = field(default_factory=Memo)
    slurm_calls: int = 0
    slurm_error: str | None = None  # Slurm's last refusal (the rows keep its earlier answers)
    _statuses: dict[str, JobStatus] = field(default_factory=dict)
    _asked_at: float | None = None
    _listing: tuple[list[Path], Hashable, float, list[Path]] | None = None
    _seen: dict[Path, _Seen] = field(default_factory=dict)
    _jobs: dict[Path, JobDir] = field(default_factory=dict)
    _tails: dict[tuple[Path, str], JsonlTail] = field(default_factory=dict)
    _gate_files: dict[tuple[Path, str | None, bool], tuple[str, ...]] = field(default_factory=dict)
    _recheck: set[str] = field(default_factory=set)  # ids of ended jobs whose folder changed since Slurm was asked
    _shown: list[Path] | None = None  # the folders of the last refresh (what is kept is forgotten when they change)

    def refresh(self) -> list[JobRow]:
        paths = self._paths()
        gates: dict[Path, tuple[Stamp | None, ...]] = {}
        jobs: dict[Path, JobDir] = {}
        for path in paths:  # a folder whose gate did not move keeps its JobDir (no stat of its identity files)
            seen = self._seen.get(path)
            job = seen.job if seen is not None else self._job(path)
            gates[path] = self._gate(path, job, seen.row.terminal if seen is not None else False)
            moved = seen is not None and seen.gate != gates[path]
            jobs[path] = self._job(path) if moved else job
            job_id = jobs[path].job_id
            if moved and job_id:  # Slurm is asked again even when it called the job ended (a requeue writes the folder)
                self._recheck.add(job_id)
        self._jobs = jobs
        self._ask_slurm(list(jobs.values()))
        rows = [self._row(p, job, gates[p]) for p, job in jobs.items()]
        if paths is not self._shown:
            self._shown = paths
            self._forget(set(paths))
        if self.remote:
            rows += self.memo.get("remote", [index_path()], lambda: _remote(self.limit))
        return rows

    def _job(self, path: Path) -> JobDir:
        found: JobDir = self.memo.get((path, "job"), [path / n for n in IDENTITY_FILES], lambda: read_job_dir(path))
        return found

    def ask_slurm_next(self) -> None:
        """Ask Slurm at the next refresh (after a cancel: the new state at once)."""
        self._asked_at = None

    def detail(self, key: str) -> Detail | None:
        """The detail of a row shown by the last refresh (None: a remote job, or gone), read through the memo
        (a part is read again only when its files changed)."""
        job = self._jobs.get(Path(key))
        return read_detail(job, self.memo) if job is not None else None

    # --- the folders ---------------------------------------------------------------------------

    def _paths(self) -> list[Path]:
        kept = self._listing
        if kept is not None:
            watched, token, listed_at, paths = kept
            if token == stamps(watched) and self.clock() - listed_at < RELIST_S:
                return paths
        found = iter_job_paths(self.root)  # newest first, read lazily
        paths = list(itertools.islice(found, self.limit) if self.limit > 0 else found)
        if kept is not None and paths == kept[3]:
            paths = kept[3]  # the same folders: what is kept of them stays
        # the root's stamp and each array folder's: a new folder, or a new element, changes one
        watched = [self.root, *sorted({p.parent for p in paths if p.parent != self.root
                                       and (p.parent / ARRAY_FILE).exists()})]
        self._listing = (watched, stamps(watched), self.clock(), paths)
        return paths

    def _forget(self, shown: set[Path]) -> None:
        self._seen = {p: s for p, s in self._seen.items() if p in shown}
        self._tails = {k: t for k, t in self._tails.items() if k[0] in shown}
        self._gate_files = {k: f for k, f in self._gate_files.items() if k[0] in shown}
        self.memo.forget(lambda key: not isinstance(key, tuple) or key[0] in shown)

    # --- Slurm ---------------------------------------------------------------------------------

    def _ask_slurm(self, jobs: list[JobDir]) -> None:
        """One batched query for every queued job Slurm has not called ended, at most every ``slurm_every`` s."""
        now = self.clock()
        if self._asked_at is not None and now - self._asked_at < self.slurm_every:
            return
        wanted = {j.job_id: j for j in jobs if j.mode == "slurm" and j.job_id}
        ids = [i for i in wanted if i not in self._statuses or not self._statuses[i].terminal or i in self._recheck]
        self._asked_at = now
        self._recheck.clear()
        if not ids:
            return
        raw = {i: j.raw_job_id for i, j in wanted.items() if j.raw_job_id and i in ids}
        self.slurm_calls += 1
        try:
            found = slurm_job_status(ids, runner=self.runner, details=False, raw_ids=raw)
        except SlurmError as exc:
            self.slurm_error = exc.message
            log.info("no job states: %s", exc.message)
            return
        self.slurm_error = None
        self._statuses.update(found)

    # --- one row -------------------------------------------------------------------------------

    def _gate(self, path: Path, job: JobDir, ended: bool) -> tuple[Stamp | None, ...]:
        """What changes when the folder's records do: the folder and ``logs/`` (files replaced atomically,
        new files), ``job_id`` (rewritten in place) and, until the job ended, the files appended to."""
        key = (path, job.job_id, ended)
        files = self._gate_files.get(key)
        if files is None:
            found = [path, path / LOG_DIR, path / JOB_ID_FILE]
            if not ended:
                found += [path / METRICS_FILE, path / STEPS_FILE, _batch_log(path, job)]
            files = self._gate_files[key] = tuple(str(f) for f in found)
        return tuple(map(stamp, files))

    def _row(self, path: Path, job: JobDir, gate: tuple[Stamp | None, ...]) -> JobRow:
        status = self._statuses.get(job.job_id) if job.mode == "slurm" and job.job_id else None
        seen = self._seen.get(path)
        same = seen is not None and seen.job is job and seen.gate == gate
        if seen is not None and same and (seen.status is status or seen.status == status):
            return seen.row
        row = self._build(path, job, status)
        if seen is None or seen.row.terminal != row.terminal:
            gate = self._gate(path, job, row.terminal)
        self._seen[path] = _Seen(gate, status, row, job)
        return row

    def _build(self, path: Path, job: JobDir, status: JobStatus | None) -> JobRow:
        memo = self.memo
        state = memo.get((path, "state"), [path / n for n in STATE_FILES],
                         lambda: jobstate.describe(job.job_id, job, status, self.cluster), extra=status)
        progress = memo.get((path, "progress"), [path / PROGRESS_FILE], lambda: read_progress(path))
        attempts = memo.get((path, "attempts"), [path / ATTEMPTS_FILE], lambda: read_attempts(path))
        result = memo.get((path, "result"), [path / RESULT_FILE], lambda: read_result(path))
        restart = jobstate.records_restart({**state, "attempts": attempts})
        blame = memo.get((path, "failure"), [path / LOG_DIR, path / ATTEMPTS_FILE, path / JOB_FILE,
                                             _batch_log(path, job)],
                         lambda: jobstate.failure(job, restart), extra=restart)
        cells = progress_cells(progress)
        live = state["state"] == "RUNNING" or (job.mode == "local" and not state["terminal"])
        losses, epoch_losses = self._trend(path)
        loss = to_float((progress or {}).get("loss"))
        if loss is None and (losses or epoch_losses):
            loss = (losses or epoch_losses)[-1]
        return JobRow(
            key=str(path), name=str(state.get("name") or job.name), job_id=job.job_id, mode=job.mode,
            state=str(state["state"]), terminal=bool(state["terminal"]),
            nodes=state.get("nodes") or ("local" if job.mode == "local" else None), elapsed=state.get("elapsed"),
            epoch=cells["epoch"], step=cells["step"], done=_done(progress, state["state"]),
            eta=cells["eta"] if live else None, loss=loss, trend=tuple(losses if len(losses) > 1 else epoch_losses),
            rate=cells["rate"] if live else None, restarts=restarts_shown(attempts, state.get("restarts")),
            goodput=_goodput(result, attempts), failure=blame.as_dict() if blame is not None else None,
            reason=state.get("reason"), job_dir=path,
            preempt_signal=job.config.launcher.preempt_signal if job.config is not None else None)

    def _trend(self, path: Path) -> tuple[list[float], list[float]]:
        """The last losses of ``steps.jsonl`` (per logged step) and of ``metrics.jsonl`` (per epoch)."""
        values: list[list[float]] = []
        for name, key in ((STEPS_FILE, TREND_KEY), (METRICS_FILE, "train_loss")):
            tail = self._tails.get((path, name))
            if tail is None:
                tail = self._tails[(path, name)] = JsonlTail(path / name, keep=TREND_POINTS)
            tail.poll()
            found = (to_float(r.get(key)) for r in tail.records)
            values.append([v for v in found if v is not None])
        return values[0], values[1]

    def tail_reads(self) -> int:
        """How often the ``.jsonl`` tails were read (tests and the benchmark count reads)."""
        return sum(t.reads for t in self._tails.values())


def _batch_log(path: Path, job: JobDir) -> Path:
    return log_path(path, job.job_id if job.mode == "slurm" else None)


def _done(progress: Mapping[str, Any] | None, state: object) -> float | None:
    """The share of the run done: whole epochs and the steps of the current one (progress.json)."""
    if state == "COMPLETED":
        return 1.0
    if not progress:
        return None
    epoch, epochs, step, steps = (to_int(progress.get(k)) for k in ("epoch", "epochs", "step", "steps"))
    if epoch is None or not epochs or step is None or not steps:
        return None
    return max(0.0, min(1.0, ((epoch - 1) * steps + step) / (epochs * steps)))


def _goodput(result: Mapping[str, Any] | None, attempts: list[dict[str, Any]]) -> float | None:
    """result.json's goodput (rank 0 writes it at the end); before that, the ledger of the attempts so far."""
    ledger_found = result.get("goodput") if result else None
    if isinstance(ledger_found, Mapping):
        return to_float(ledger_found.get("goodput"))
    return ledger(attempts, queued_s=None)["goodput"] if attempts else None


def _remote(limit: int) -> list[JobRow]:
    return [JobRow(key=f"remote:{r['job_dir']}:{r['job_id']}", name=r["name"] or "?", job_id=r["job_id"],
                   mode="remote", state=r["state"] or "REMOTE", terminal=False, reason=r["reason"])
            for r in remote_rows(limit)]
