"""Which rank to look at when a job fails: one pure function over the ranks' outcome records
(:mod:`orchestrator.records.restarts.rankoutcome`).

:func:`blame` reads the records of the current run and says who stopped the job. Each record gets a
role (:data:`ROLES`), and the first verdict of :data:`VERDICTS` that applies wins: a rank killed by a
signal (not by its launcher) first, then a rank's own failure; then, when ranks gave up waiting (or
failed only because a peer went away: :data:`PEER_LOSS`), the ranks that did not (still running,
stopped from outside, or silent) are the ones that stopped making progress, and the message names the
rank that waited for them and the timeout that applied; then a failure that only says a peer was lost;
then a silent rank beside ranks its launcher stopped; then the stopped ranks. A rank whose error is
only the consequence of a lost peer never wins over the rank that was lost. The message's words are
:mod:`orchestrator.records.restarts.blametext`'s.

What a launcher saw of the ends (:class:`Seen`: ``orch run`` waits for every rank; under Slurm srun's
report in the batch log, ``slurm/stepreport.py``) completes the records first (:func:`complete`).
``orch run`` (``orchestrator.local.result``), ``orch status``, ``orch logs`` (``slurm/jobstate.py``'s
``failure``: srun's report for the attempt the batch script has not judged yet, else its verdict in
``attempts.json``) and the restart policy all use it. No I/O here: the callers read the files
(``outcome.read_outcomes``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from orchestrator.records.restarts.blametext import describe_exit, fate, final_words, listed, setting, was
from orchestrator.records.restarts.rankoutcome import PEER_FAILURE_EXIT, TIMED_OUT, RankOutcome, current_run

# A rank's own error that only says another rank went away (gloo, NCCL, the store): the consequence of a lost peer.
PEER_LOSS = re.compile(r"connection (closed|reset)|closed by peer|broken pipe|lost the connection to another rank|"
                       r"timed out|timeout|communicator was aborted|socket timeout", re.IGNORECASE)


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
    fates = "; ".join(f"rank {r} {fate(run.by_rank.get(r), first)}" for r in silent)
    message = f"{fates}; rank {listed(ranks)} {was(ranks)} stopped{by} ({first.signal or 'a signal'}) after it"
    return Blame(kind="vanished", ranks=tuple(silent), message=message, notes=run.notes)


def _by_stopped(run: _Run) -> Blame | None:
    stopped = sorted(o.rank for o in run.roles["stopped"])
    if not stopped:
        return None
    first = run.by_rank[stopped[0]]
    by = f" by {first.stopped_by}" if first.stopped_by else ""
    return Blame(kind="stopped", ranks=tuple(stopped), exit_code=first.exit_code, notes=run.notes,
                 message=f"rank {listed(stopped)} {was(stopped)} stopped{by} ({first.signal or 'a signal'}) "
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
        message += (f" (rank {listed(early)} had already exited with code 0 in the middle of the run)")
    others = [f"rank {o.rank} {final_words(o)}" for o in sorted(by_rank.values(), key=lambda o: o.rank)
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
        fates = "; ".join(f"rank {r} {fate(by_rank.get(r), first)}" for r in stuck)
        message = (f"rank {listed(stuck)} stopped making progress: rank {first.rank} waited for it in a "
                   f"collective and gave up ({gave_up}{setting(timeout[1])}); {fates}")
        return Blame(kind="stuck", ranks=tuple(stuck), waiting=waiting, message=message, exit_code=code,
                     timeout_s=timeout[0], timeout_setting=timeout[1], notes=notes)
    early = sorted(o.rank for o in by_rank.values() if o.kind == "completed")
    if early:
        message = (f"rank {listed(early)} had already exited with code 0 in the middle of the run: rank "
                   f"{first.rank} waited for it in a collective and gave up ({gave_up}{setting(timeout[1])})")
        return Blame(kind="early_exit", ranks=tuple(early), waiting=waiting, message=message, exit_code=code,
                     timeout_s=timeout[0], timeout_setting=timeout[1], notes=notes)
    behind = _behind(waited)
    message = (f"every rank gave up waiting in a collective: rank {first.rank} {describe_exit(code)} ({gave_up}"
               f"{setting(timeout[1])}); the ranks were in different collectives (e.g. a barrier() under "
               "`if rank == 0`)")
    if behind:
        message += f"; rank {listed(behind)} had finished the fewest steps"
    return Blame(kind="all_waited", ranks=tuple(behind) or (first.rank,), waiting=waiting, message=message,
                 exit_code=code, timeout_s=timeout[0], timeout_setting=timeout[1], notes=notes)


def _behind(waited: list[RankOutcome]) -> list[int]:
    """The ranks with the fewest finished steps, when the ranks differ (else none)."""
    counts = {o.rank: (o.last_step.epoch, o.last_step.step) if o.last_step else (0, 0) for o in waited}
    if len(set(counts.values())) < 2:
        return []
    low = min(counts.values())
    return sorted(r for r, c in counts.items() if c == low)


def _ended(record: RankOutcome) -> float:
    return record.ended if record.ended is not None else float("inf")


