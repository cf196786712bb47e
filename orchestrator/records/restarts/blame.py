"""Which rank to look at when a job fails: one pure function over the ranks' outcome records.

Every task (``orchestrator.task.launch``, under ``srun`` and under ``orch run``) leaves a record of how
it ended in the job folder (``logs/rank<R>.outcome.json``, see :mod:`orchestrator.task.outcome`): it is
written as ``running`` when the task starts and rewritten when it ends as

- ``completed``: exit 0;
- ``failed``: its own failure (an exception in training, bad input), with the one-line reason;
- ``waited``: it gave up waiting in a collective (timed out, or lost the connection), with the
  timeout that applied and the setting that sets it (``launcher.collective_timeout`` in training,
  ``launcher.init_timeout`` at start-up, in build and around checkpoints);
- ``signalled``: it was stopped by a signal while still running (SIGTERM from srun or orch run).

A record still saying ``running`` after the job ended means the task ended without a word (SIGKILL,
the out-of-memory killer, a lost node) or was stuck where no signal handler could run. Records of an
earlier run of the folder (a requeue, ``orch run --resume``) carry another ``restart`` and are set aside.

:func:`blame` reads the records of the current run and says who stopped the job. Each record gets a
role (:data:`ROLES`), and the first verdict of :data:`VERDICTS` that applies wins: a rank killed by a
signal (not by its launcher) first, then a rank's own failure; then, when ranks gave up waiting (or
failed only because a peer went away: :data:`PEER_LOSS`), the ranks that did not (still running,
stopped from outside, or silent) are the ones that stopped making progress, and the message names the
rank that waited for them and the timeout that applied; then a failure that only says a peer was lost;
then a silent rank beside ranks its launcher stopped; then the stopped ranks. A rank whose error is
only the consequence of a lost peer never wins over the rank that was lost.

What a launcher saw of the ends (:class:`Seen`: ``orch run`` waits for every rank; under Slurm srun's
report in the batch log, ``slurm/stepreport.py``) completes the records first (:func:`complete`).
``orch run`` (``orchestrator.local.runner``), ``orch status``, ``orch logs`` (``slurm/jobstate.py``'s
``failure``: srun's report for the attempt the batch script has not judged yet, else its verdict in
``attempts.json``) and the restart policy all use it. No I/O here: the callers read the files
(``outcome.read_outcomes``).
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Kind = Literal["running", "completed", "failed", "waited", "signalled"]
FINAL_KINDS = frozenset({"completed", "failed", "waited", "signalled"})
LOST_CONNECTION = "lost"  # ``waited.how``: the connection to another rank closed (it exited)
TIMED_OUT = "timeout"  # ``waited.how``: the collective timed out
PEER_FAILURE_EXIT = 3  # a task's exit code when a collective failed or timed out: most likely another rank's failure
# A rank's own error that only says another rank went away (gloo, NCCL, the store): the consequence of a lost peer.
PEER_LOSS = re.compile(r"connection (closed|reset)|closed by peer|broken pipe|lost the connection to another rank|"
                       r"timed out|timeout|communicator was aborted|socket timeout", re.IGNORECASE)


class LastStep(BaseModel):
    """The last training step this rank finished (kept in memory, written with the outcome)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)  # JSON types exactly

    epoch: int = Field(ge=1)  # 1-based
    step: int = Field(ge=0)  # steps of that epoch done
    time: float = Field(ge=0, allow_inf_nan=False)  # wall clock (time.time())


class WorldJoin(BaseModel):
    """A script's rank: the default process group it joined (``size`` None: init_process_group not called)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)  # JSON types exactly

    size: int | None = Field(default=None, ge=1)  # the default group's world size
    rank: int | None = Field(default=None, ge=0)  # this rank's rank in it
    backend: str | None = Field(default=None, max_length=40)
    orch_rendezvous: bool | None = None  # at orch's MASTER_ADDR:MASTER_PORT (None: a store orch cannot place)


class RankOutcome(BaseModel):
    """One task's record (``logs/rank<R>.outcome.json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)  # JSON types exactly

    version: Literal[1] = 1
    rank: int = Field(ge=0)
    world_size: int = Field(ge=1)
    run: str = Field(max_length=200)  # the Slurm job id (array element ``123_4``), or "local"
    restart: int = Field(ge=0)  # SLURM_RESTART_COUNT, or job.json's restarts for orch run --resume
    kind: Kind
    exit_code: int | None = Field(default=None, ge=-128, le=255)  # a signal as -N (as Popen says)
    reason: str | None = Field(default=None, max_length=2000)  # one line: why it failed or gave up
    how: Literal["timeout", "lost"] | None = None  # waited: timed out, or lost the connection
    timeout_s: int | None = Field(default=None, ge=0)  # waited/timeout: the timeout that applied
    timeout_setting: str | None = Field(default=None, max_length=100)  # launcher.collective_timeout, ...
    signal: str | None = Field(default=None, max_length=20)  # signalled: SIGTERM, SIGINT
    stopped_by: str | None = Field(default=None, max_length=40)  # signalled: "srun", "orch run"
    host: str | None = Field(default=None, max_length=255)
    pid: int | None = Field(default=None, ge=0)
    started: float = Field(ge=0, allow_inf_nan=False)  # wall clock
    ended: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    last_step: LastStep | None = None
    first_step: float | None = Field(default=None, ge=0, allow_inf_nan=False)  # when its first step ended
    world: WorldJoin | None = None  # scripts in several ranks: the world it joined (records/restarts/world.py)


def parse_outcome(text: str) -> RankOutcome | str:
    """A record from a file's text, or why it is not one (a note for the report; never raises)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return "not JSON"
    if not isinstance(data, dict):
        return "not a JSON object"
    try:
        return RankOutcome.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "record"
        return f"{where}: {first.get('msg', 'invalid')}"


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


BlameKind = Literal["failed", "vanished", "stuck", "early_exit", "all_waited", "stopped"]


@dataclass(frozen=True)
class Blame:
    """Who stopped the job. ``ranks``: the rank(s) to look at; ``waiting``: the ranks that gave up
    waiting for them; ``exit_code``: the code of the rank that reported first (the job's); ``node``:
    the first rank's node when the evidence points at it (set by a caller that knows Slurm's names)."""

    kind: BlameKind
    ranks: tuple[int, ...]
    message: str
    waiting: tuple[int, ...] = ()
    exit_code: int | None = None
    timeout_s: int | None = None
    timeout_setting: str | None = None
    notes: tuple[str, ...] = field(default=())
    node: str | None = None
    place: str | None = None  # where the rank the others waited in a collective for was (records/stacks.py)
    places: tuple[dict[str, Any], ...] = ()  # every rank's place when the hang ended

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "rank": self.ranks[0] if self.ranks else None, "node": self.node,
                "ranks": list(self.ranks), "waiting": list(self.waiting), "exit_code": self.exit_code,
                "timeout_s": self.timeout_s,
                "timeout_setting": self.timeout_setting, "message": self.message, "notes": list(self.notes),
                "place": self.place, "places": list(self.places)}


def current_run(records: Sequence[RankOutcome], run: str | None = None,
                restart: int | None = None) -> tuple[dict[int, RankOutcome], list[str]]:
    """The records of the current run, by rank, and notes on those set aside. ``run``/``restart``:
    the run asked about (Slurm's job id and restart count) when known; else the newest run present.
    Two records of one rank and run: the later one counts."""
    pool = [r for r in records if run is None or r.run == run]
    notes = [f"rank {r.rank}: a record of job {r.run} set aside (not job {run})"
             for r in records if run is not None and r.run != run]
    if restart is None and pool:
        newest = max(pool, key=lambda r: (r.restart, r.started))
        restart = newest.restart
    current: dict[int, RankOutcome] = {}
    for record in pool:
        if record.restart != restart:
            notes.append(f"rank {record.rank}: the record of restart {record.restart} set aside "
                         f"(this run is restart {restart})")
            continue
        held = current.get(record.rank)
        if held is None or (record.ended or record.started) >= (held.ended or held.started):
            current[record.rank] = record
    return current, notes


Role = Literal["completed", "waited", "stopped", "died", "lost_peer", "failed", "silent"]


def _died(o: RankOutcome) -> bool:
    """Ended by a signal its launcher did not send (SIGKILL, the OOM killer, a lost node)."""
    return o.kind == "running" and o.exit_code is not None and o.exit_code < 0


def _lost_peer(o: RankOutcome) -> bool:
    """Failed only because another rank went away (its error says so, or it exited as a waiter does)."""
    return (o.kind == "failed" and PEER_LOSS.search(o.reason or "") is not None) or \
        (o.kind == "running" and o.exit_code == PEER_FAILURE_EXIT)


# A record's role: the first row that matches.
ROLES: tuple[tuple[Role, Callable[[RankOutcome], bool]], ...] = (
    ("completed", lambda o: o.kind == "completed"),
    ("waited", lambda o: o.kind == "waited"),
    ("stopped", lambda o: o.kind == "signalled"),
    ("died", _died),
    ("lost_peer", _lost_peer),
    ("failed", lambda o: o.kind == "failed" or bool(o.exit_code)),
    ("silent", lambda o: True),  # still "running", no exit code known: ended without a word, or stuck
)


def role(record: RankOutcome) -> Role:
    return next(name for name, test in ROLES if test(record))


@dataclass(frozen=True)
class _Run:
    """The current run's records by role (each list by end time, then rank), for the verdicts."""

    by_rank: dict[int, RankOutcome]
    roles: dict[Role, list[RankOutcome]]
    missing: list[int]  # ranks with no record of this run
    notes: tuple[str, ...]

    def stuck(self) -> list[int]:
        """The ranks that did not give up waiting and did not end on their own: stopped, silent or missing."""
        return sorted([o.rank for o in self.roles["stopped"] + self.roles["silent"]] + self.missing)


def _by_died(run: _Run) -> Blame | None:
    return _own_failure(run.roles["died"], run.by_rank, run.notes) if run.roles["died"] else None


def _by_failed(run: _Run) -> Blame | None:
    return _own_failure(run.roles["failed"], run.by_rank, run.notes) if run.roles["failed"] else None


def _by_waited(run: _Run) -> Blame | None:
    """Ranks that gave up waiting; a failure that only says a peer was lost counts as one when a rank is stuck."""
    waiters = run.roles["waited"] + (run.roles["lost_peer"] if run.stuck() else [])
    if not waiters:
        return None
    waiters.sort(key=lambda o: (o.how != TIMED_OUT, _ended(o), o.rank))
    return _waited(waiters, run.by_rank, run.stuck(), run.notes)


def _by_lost_peer(run: _Run) -> Blame | None:
    return _own_failure(run.roles["lost_peer"], run.by_rank, run.notes) if run.roles["lost_peer"] else None


def _by_silent(run: _Run) -> Blame | None:
    """Ranks its launcher stopped, and one still "running" that ended without a word (killed, or where no
    handler runs). A rank with no record at all is not named here: scancel in start-up leaves those."""
    stopped, silent = run.roles["stopped"], sorted(o.rank for o in run.roles["silent"])
    if not stopped or not silent:
        return None
    first, ranks = stopped[0], sorted(o.rank for o in stopped)
    by = f" by {first.stopped_by}" if first.stopped_by else ""
    fates = "; ".join(f"rank {r} {_fate(run.by_rank.get(r), first)}" for r in silent)
    message = f"{fates}; rank {_ranks(ranks)} {_was(ranks)} stopped{by} ({first.signal or 'a signal'}) after it"
    return Blame(kind="vanished", ranks=tuple(silent), message=message, notes=run.notes)


def _by_stopped(run: _Run) -> Blame | None:
    stopped = sorted(o.rank for o in run.roles["stopped"])
    if not stopped:
        return None
    first = run.by_rank[stopped[0]]
    by = f" by {first.stopped_by}" if first.stopped_by else ""
    return Blame(kind="stopped", ranks=tuple(stopped), exit_code=first.exit_code, notes=run.notes,
                 message=f"rank {_ranks(stopped)} {_was(stopped)} stopped{by} ({first.signal or 'a signal'}) "
                         "while running (scancel, the time limit, or an interrupt)")


# Who stopped the job: the first verdict that applies (strongest evidence first).
VERDICTS: tuple[tuple[str, Callable[[_Run], Blame | None]], ...] = (
    ("a rank killed by a signal its launcher did not send", _by_died),
    ("a rank's own failure", _by_failed),
    ("ranks that gave up waiting for a rank that stopped making progress", _by_waited),
    ("a failure that only says a peer was lost, no peer to blame", _by_lost_peer),
    ("a silent rank beside ranks its launcher stopped", _by_silent),
    ("ranks stopped from outside", _by_stopped),
)


def blame(records: Sequence[RankOutcome], *, world_size: int | None = None, run: str | None = None,
          restart: int | None = None, notes: Sequence[str] = ()) -> Blame | None:
    """Who stopped the job, from the ranks' records (None: nothing went wrong, or nothing is known).

    ``world_size`` (job.json) names the ranks that left no record of this run at all."""
    kept = [r for r in records if world_size is None or r.rank < world_size]
    outside = [f"rank {r.rank}: a record beyond the job's {world_size} ranks set aside"
               for r in records if world_size is not None and r.rank >= world_size]
    by_rank, set_aside = current_run(kept, run, restart)
    size = world_size if world_size is not None else (max(by_rank) + 1 if by_rank else 0)
    roles: dict[Role, list[RankOutcome]] = {name: [] for name, _ in ROLES}
    for record in sorted(by_rank.values(), key=lambda o: (_ended(o), o.rank)):
        roles[role(record)].append(record)
    state = _Run(by_rank=by_rank, roles=roles, missing=[r for r in range(size) if r not in by_rank],
                 notes=(*notes, *outside, *set_aside))
    return next((found for _, verdict in VERDICTS if (found := verdict(state)) is not None), None)


def _own_failure(own: list[RankOutcome], by_rank: dict[int, RankOutcome], notes: tuple[str, ...]) -> Blame:
    first = own[0]
    code = first.exit_code if first.exit_code is not None else 1
    message = f"rank {first.rank} {describe_exit(code)}" + (f" ({first.reason})" if first.reason else "")
    if first.kind == "running":
        message += " without a word (SIGKILL, out of memory, or its node was lost)" if code < 0 else ""
    early = sorted(o.rank for o in by_rank.values()
                   if o.kind == "completed" and o.ended is not None and o.ended <= _ended(first))
    if early:
        message += (f" (rank {_ranks(early)} had already exited with code 0 in the middle of the run)")
    others = [f"rank {o.rank} {_final_words(o)}" for o in sorted(by_rank.values(), key=lambda o: o.rank)
              if o.rank != first.rank and o.kind != "completed"]
    if others:
        message += f"; then: {'; '.join(others)}"
    return Blame(kind="vanished" if first.kind == "running" else "failed", ranks=(first.rank,), message=message,
                 exit_code=code, notes=notes)


def _waited(waited: list[RankOutcome], by_rank: dict[int, RankOutcome], stuck: list[int],
            notes: tuple[str, ...]) -> Blame:
    first = waited[0]
    code = first.exit_code if first.exit_code is not None else 1
    timed = next((o for o in waited if o.how == TIMED_OUT), None)
    timeout = (timed.timeout_s, timed.timeout_setting) if timed else (None, None)
    gave_up = first.reason or "a collective failed"
    waiting = tuple(o.rank for o in waited)
    if stuck:
        fates = "; ".join(f"rank {r} {_fate(by_rank.get(r), first)}" for r in stuck)
        message = (f"rank {_ranks(stuck)} stopped making progress: rank {first.rank} waited for it in a "
                   f"collective and gave up ({gave_up}{_setting(timeout[1])}); {fates}")
        return Blame(kind="stuck", ranks=tuple(stuck), waiting=waiting, message=message, exit_code=code,
                     timeout_s=timeout[0], timeout_setting=timeout[1], notes=notes)
    early = sorted(o.rank for o in by_rank.values() if o.kind == "completed")
    if early:
        message = (f"rank {_ranks(early)} had already exited with code 0 in the middle of the run: rank "
                   f"{first.rank} waited for it in a collective and gave up ({gave_up}{_setting(timeout[1])})")
        return Blame(kind="early_exit", ranks=tuple(early), waiting=waiting, message=message, exit_code=code,
                     timeout_s=timeout[0], timeout_setting=timeout[1], notes=notes)
    behind = _behind(waited)
    message = (f"every rank gave up waiting in a collective: rank {first.rank} {describe_exit(code)} ({gave_up}"
               f"{_setting(timeout[1])}); the ranks were in different collectives (e.g. a barrier() under "
               "`if rank == 0`)")
    if behind:
        message += f"; rank {_ranks(behind)} had finished the fewest steps"
    return Blame(kind="all_waited", ranks=tuple(behind) or (first.rank,), waiting=waiting, message=message,
                 exit_code=code, timeout_s=timeout[0], timeout_setting=timeout[1], notes=notes)


def _fate(record: RankOutcome | None, waiter: RankOutcome) -> str:
    """What became of a rank that stopped making progress, with its last step when known."""
    if record is None:
        text = "left no record of this run (it never started, or its node was lost)"
    elif record.kind == "signalled":
        by = f" by {record.stopped_by}" if record.stopped_by else ""
        text = f"was still running and was stopped{by} ({record.signal or 'a signal'})"
    elif record.exit_code:
        text = f"was still running and {describe_exit(record.exit_code)}"
    else:
        text = "was still running and ended without a word (killed, or stuck where it could not answer a signal)"
    last = record.last_step if record is not None else None
    if last is not None:
        ago = (waiter.ended or waiter.started) - last.time
        when = f", {ago:.0f} s before rank {waiter.rank} gave up" if ago >= 0 else ""
        text += f"; its last step: epoch {last.epoch}, step {last.step}{when}"
    elif record is not None:
        text += "; it had finished no training step"
    return text


def _behind(waited: list[RankOutcome]) -> list[int]:
    """The ranks with the fewest finished steps, when the ranks differ (else none)."""
    counts = {o.rank: (o.last_step.epoch, o.last_step.step) if o.last_step else (0, 0) for o in waited}
    if len(set(counts.values())) < 2:
        return []
    low = min(counts.values())
    return sorted(r for r, c in counts.items() if c == low)


def _final_words(record: RankOutcome) -> str:
    if record.kind == "signalled":
        return f"was stopped ({record.signal or 'a signal'})" if record.exit_code is None else \
            describe_exit(record.exit_code)
    if record.exit_code is None:
        return "ended without a word" if record.kind == "running" else f"ended ({record.kind})"
    return describe_exit(record.exit_code)


def _setting(name: str | None) -> str:
    return f"; {name} sets the wait" if name else ""


def _ended(record: RankOutcome) -> float:
    return record.ended if record.ended is not None else float("inf")


def _ranks(ranks: Sequence[int]) -> str:
    return ", ".join(map(str, ranks))


def _was(ranks: Sequence[int]) -> str:
    return "was" if len(ranks) == 1 else "were"
