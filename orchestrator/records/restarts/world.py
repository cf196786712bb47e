"""Did a script's ranks form one world? One pure verdict over what the ranks' records say they joined.

A script run in several ranks is meant to call ``init_process_group`` and join one default process group
of the job's size. Each rank's outcome record (``logs/rank<R>.outcome.json``) says what it joined
(:class:`~orchestrator.records.restarts.rankoutcome.WorldJoin`, written by :mod:`orchestrator.task.worldcheck`):
nothing yet, or a world of some size at some rendezvous. :func:`world_verdict` reads those:

- **formed**: every rank joined a default group of the job's size, with distinct ranks in it (subgroups,
  ``new_group``, are never counted): no verdict;
- **never formed**: ranks initialised worlds of another size (a hard-coded ``tcp://localhost:PORT`` with
  ``world_size=1``): "the 2 ranks never formed a process group: 2 independent copies trained";
- **never initialised**: no rank called ``init_process_group`` (a framework that decided it was alone).

A job of one rank, a job file (orch's own entrypoint always forms its world) and ranks declared independent
(``launcher.world_check: independent``) carry no ``world`` and get no verdict. While ranks still run only
what is already certain is said (a rank that joined a world of another size). :func:`rank_problem` is one
rank's own view, for ``launcher.world_check: strict`` (that rank fails). No I/O here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from orchestrator.records.restarts.rankoutcome import RankOutcome, WorldJoin, current_run

WorldKind = Literal["never_formed", "never_initialised"]
WORLD_CHECKS = ("warn", "strict", "independent")  # launcher.world_check (--strict-world, --independent-ranks)
INDEPENDENT_HINT = ("if the ranks are meant to train independently, say so: orch run/submit --independent-ranks "
                    "(launcher.world_check: independent)")
NEVER_FORMED_HINT = ("call init_process_group with the rendezvous orch sets (init_method='env://', or none: "
                     "MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE); " + INDEPENDENT_HINT)
NEVER_INITIALISED_HINT = ("call init_process_group (or let the framework see torchrun's variables: RANK, "
                          "WORLD_SIZE, LOCAL_RANK); " + INDEPENDENT_HINT)
SHOWN_GROUPS = 4  # how many distinct situations a message names (the rest are counted)


@dataclass(frozen=True)
class WorldVerdict:
    """Why the ranks did not form one world; ``ranks``: the ranks outside the job's world."""

    kind: WorldKind
    message: str
    hint: str
    ranks: tuple[int, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "hint": self.hint, "ranks": list(self.ranks)}


def describe(world: WorldJoin) -> str:
    """What one rank joined, in a few words."""
    if world.size is None:
        return "never called init_process_group"
    where = {True: "at orch's rendezvous", False: "not at orch's rendezvous (MASTER_ADDR:MASTER_PORT)",
             None: "at a store of its own"}[world.orch_rendezvous]
    backend = f" ({world.backend})" if world.backend else ""
    return f"initialised a world of {world.size} rank{'s' if world.size > 1 else ''}{backend} {where}"


def rank_problem(world: WorldJoin, world_size: int) -> str | None:
    """One rank's own view: why the job's ranks cannot have formed one world (None: nothing wrong here)."""
    if world_size <= 1 or world.size == world_size:
        return None
    alone = " and trained alone" if world.size in (None, 1) else ""
    return f"the job's {world_size} ranks never formed a process group: this rank {describe(world)}{alone}"


def world_verdict(worlds: Mapping[int, WorldJoin | None], world_size: int, *,
                  ended: bool = True) -> WorldVerdict | None:
    """The verdict on the job's world from each rank's :class:`WorldJoin` (None: not checked, e.g. an
    older record). ``ended``: every rank has ended; while they run, only worlds of another size count."""
    watched = {rank: world for rank, world in sorted(worlds.items()) if world is not None}
    if world_size <= 1 or not watched:
        return None
    outside = {rank: w for rank, w in watched.items() if w.size != world_size and (ended or w.size is not None)}
    if not outside:
        return _duplicates(watched, world_size)
    if all(w.size is None for w in outside.values()) and len(outside) == len(watched):
        return WorldVerdict("never_initialised", f"none of the {world_size} ranks called init_process_group: "
                            f"{world_size} independent copies trained", NEVER_INITIALISED_HINT, tuple(outside))
    alone = ended and len(watched) == world_size and all(w.size in (None, 1) for w in watched.values())
    head = (f"the {world_size} ranks never formed a process group: {world_size} independent copies trained" if alone
            else f"the {world_size} ranks never formed one process group of {world_size}")
    return WorldVerdict("never_formed", f"{head} ({_situations(outside)})", NEVER_FORMED_HINT, tuple(outside))


def _duplicates(watched: Mapping[int, WorldJoin], world_size: int) -> WorldVerdict | None:
    """Worlds of the right size whose ranks repeat: the ranks joined different worlds (another job's?)."""
    seen: dict[int, list[int]] = {}
    for rank, world in watched.items():
        if world.rank is not None:
            seen.setdefault(world.rank, []).append(rank)
    twice = {group_rank: ranks for group_rank, ranks in seen.items() if len(ranks) > 1}
    if not twice:
        return None
    group_rank, ranks = min(twice.items())
    return WorldVerdict("never_formed", f"the {world_size} ranks never formed one process group of {world_size}: "
                        f"{_list(ranks)} were each rank {group_rank} of a world of {world_size}",
                        NEVER_FORMED_HINT, tuple(sorted(r for rs in twice.values() for r in rs)))


def _situations(outside: Mapping[int, WorldJoin]) -> str:
    """``rank 0, 1 initialised a world of 1 rank(s) (gloo) not at orch's rendezvous; ...`` (a few, then a count)."""
    by_text: dict[str, list[int]] = {}
    for rank, world in outside.items():
        by_text.setdefault(describe(world), []).append(rank)
    parts = [f"{_list(ranks)} {text}" for text, ranks in list(by_text.items())[:SHOWN_GROUPS]]
    more = len(by_text) - SHOWN_GROUPS
    return "; ".join(parts) + (f"; and {more} other situation(s)" if more > 0 else "")


def _list(ranks: Sequence[int]) -> str:
    """``rank 3``, ``ranks 0, 1``, ``ranks 0, 1, ... and 56 more``."""
    shown = ", ".join(map(str, ranks[:8])) + (f" and {len(ranks) - 8} more" if len(ranks) > 8 else "")
    return f"rank {shown}" if len(ranks) == 1 else f"ranks {shown}"


def judge(records: Sequence[RankOutcome], world_size: int, *, run: str | None = None,
          restart: int | None = None) -> WorldVerdict | None:
    """The verdict on the current run's records (``orch run`` after its ranks ended, ``orch status``)."""
    by_rank, _ = current_run([r for r in records if r.rank < world_size], run, restart)
    ended = len(by_rank) == world_size and all(r.kind == "completed" for r in by_rank.values())
    return world_verdict({rank: record.world for rank, record in by_rank.items()}, world_size, ended=ended)
