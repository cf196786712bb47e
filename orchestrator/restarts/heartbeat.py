"""A worker's training steps, seen by its agent (in-process restarts): a rank that runs but makes no step is hung.

A stopped worker (SIGSTOP, state ``T``) is easy to see from outside; a worker that runs but is stuck (a data
loader that blocks, an endless loop in the user's code) is not. So each training step of orch's entrypoint
ticks a counter that the worker shares with its agent: 16 bytes of anonymous memory mapped before the fork
(``MAP_SHARED``: no file, no thread, no store call). A timer thread would keep beating while the main thread is
stuck; a step counter does not.

The counter is *armed* only while the rank is inside an epoch's training steps: it rests (:meth:`Heartbeat.rest`)
when the steps of an epoch end (evaluation, the epoch's checkpoint), around a checkpoint taken mid-epoch, and
while a survivor waits for an in-process restart's decision. Its agent (``restarts/agent.py``) kills a worker
whose armed counter has not moved for one collective timeout once a peer's worker gave up waiting for it, and
stays so for :func:`settle_s` more (the ranks that waited in a collective have timed out and rest, so the one
still armed is the one they waited for), or for :func:`hung_after` seconds in any case.

A worker's :class:`Heartbeat` travels on its :class:`~orchestrator.restarts.generation.Worker` (made before the
fork) into the entrypoint (``runtime/entry.py``: ``run(..., beat=)``); a rank without an agent gets a
:class:`NoBeat`, whose ticks and rests do nothing. No module global.

The agents beat too (:class:`Agents`): an agent stopped for good (SIGSTOP, a frozen node) leaves its worker training
and nobody to decide for its rank. Each agent adds to its own key in the agents' store every ``ALIVE_POLLS`` polls;
rank 0's agent reads every other rank's count as often, in one ``multi_get`` once every key is there (one round trip
to the store on its own host: 60 ms at 4,096 ranks where a call per rank took 1.6 s, bench/bench_agent_heartbeat.py),
and names the first whose count has stood still ``AGENT_STALE_S``; another agent names rank 0's when its beat gets
no answer from the store rank 0's agent hosts (``CALL_BOUND_S``). The step then ends and the step-level restart
blames that rank.
"""

from __future__ import annotations

import mmap
import re
import struct

from orchestrator.restarts import protocol as proto
from orchestrator.restarts.store import CALL_BOUND_S, AgentStore

_LAYOUT = struct.Struct("<QQ")  # steps, armed
ALIVE_POLLS = 25  # an agent beats (and rank 0's reads the others' beats) every this many polls (0.5 s)
AGENT_STALE_S = 6.0  # an agent whose beat stood still this long is stopped (a SIGSTOP of 3 s is not)
NEVER_BEAT_S = 60.0  # one that has not beaten yet (its warm-up imports come before its first beat): this long


class Heartbeat:
    """Shared between an agent and the worker it forks next (make it before the fork)."""

    def __init__(self) -> None:
        self.memory = mmap.mmap(-1, _LAYOUT.size)  # anonymous and shared: the forked worker writes, the agent reads

    def tick(self) -> None:
        """One training step done (the worker)."""
        steps, _ = _LAYOUT.unpack_from(self.memory)
        _LAYOUT.pack_into(self.memory, 0, steps + 1, 1)

    def rest(self) -> None:
        """Not in training steps now: no step is due (the worker)."""
        steps, _ = _LAYOUT.unpack_from(self.memory)
        _LAYOUT.pack_into(self.memory, 0, steps, 0)

    def read(self) -> tuple[int, bool]:
        """(steps so far, armed) (the agent)."""
        steps, armed = _LAYOUT.unpack_from(self.memory)
        return int(steps), bool(armed)


class NoBeat:
    """The heartbeat of a rank no agent watches (no in-process restarts): its ticks and rests do nothing."""

    def tick(self) -> None:
        return None

    def rest(self) -> None:
        return None


class Watch:
    """The agent's view of one worker's heartbeat: how long its armed counter has stood still."""

    def __init__(self, beat: Heartbeat) -> None:
        self.beat = beat
        self.steps, self.since, self.asked = -1, 0.0, 0.0
        self.gave_up: float | None = None  # when a peer's giving up was first seen
        self.armed = False  # at the last look
        self.step_s: float | None = None  # the worker's recent step time: the slowest, less 10% a step since

    def stalled(self, now: float, collective_timeout: int, store: AgentStore, rank: int) -> float | None:
        """The seconds the armed counter has stood still when that means the worker hangs, else None: for
        :func:`hung_after` the collective timeout, or for one timeout when a peer's worker gave up waiting in a
        collective at least :func:`settle_s` ago (asked of the agents' ``store`` once a second at most). The ranks
        that waited in a collective time out and rest within that time of each other (a deadlock: each in its
        own collective), so the one still armed after it is the one they waited for."""
        quiet = self.quiet_for(now)
        if quiet >= hung_after(collective_timeout):
            return quiet
        if quiet < collective_timeout:
            return None
        if self.gave_up is None and now - self.asked >= 1.0:
            self.asked = now
            try:  # in the generation the worker of ``rank`` is in (a survivor's moves on without a fork)
                at = proto.at(rank)  # (a get of a key that is not there would wait: check first)
                gave_up = store.check([at]) and store.check([proto.gave_up(int(store.get(at)))])
                self.gave_up = now if gave_up else None
            except (OSError, RuntimeError, ValueError):  # the store is gone: the other ranks' end says it
                self.gave_up = None
        return quiet if self.gave_up is not None and now - self.gave_up >= settle_s(collective_timeout) else None

    def quiet_for(self, now: float) -> float:
        """Seconds the armed counter has not moved (0 while it moves or rests)."""
        steps, armed = self.beat.read()
        if not armed or steps != self.steps:
            if armed and self.armed and 0 <= self.steps < steps:  # steps made while armed: how long one takes
                took = (now - self.since) / (steps - self.steps)
                self.step_s = took if self.step_s is None else max(took, 0.9 * self.step_s)
            self.steps, self.since, self.gave_up, self.armed = steps, now, None, armed
            return 0.0
        return now - self.since

    def behind_after(self) -> float | None:
        """How long the armed counter must stand still before its worker, whose generation's failure is claimed,
        is taken to be blocked in the failed step's collective (``BEHIND_STEPS`` of its recent step times,
        ``BEHIND_MIN_S`` at least): a rank that talks to the failed one sees its sockets close and reports within
        a step. None: no step seen yet (nothing to compare with)."""
        return None if self.step_s is None else max(proto.BEHIND_MIN_S, proto.BEHIND_STEPS * self.step_s)


def hung_after(collective_timeout: int) -> float:
    """How long an armed counter may stand still: twice the collective timeout (a waiting rank times out after
    one, from its last step's collective; its step's own compute before that collective gets the other)."""
    return 2.0 * max(collective_timeout, 1)


def settle_s(collective_timeout: int) -> float:
    """How long after a peer gave up the other waiting ranks have to give up too (their collectives began up to a
    step's compute later): half the collective timeout, 2 s at least."""
    return max(2.0, collective_timeout / 2)



def alive(rank: int) -> str:
    """The store key rank ``rank``'s agent adds to while it runs (:class:`Agents`)."""
    return f"{proto.KEY_ROOT}alive/{rank}"


class Agents:
    """One agent's view of the agents' own beats in the store: its own beat, and (rank 0's) the others'."""

    def __init__(self, rank: int, world_size: int) -> None:
        self.rank, self.world_size = rank, world_size
        self.seen: dict[int, tuple[int, float]] = {}  # rank -> (its count, since when: monotonic)
        self.made = False  # every other rank's key is in the store (made by this agent's first look if not)

    def look(self, store: AgentStore, now: float) -> tuple[int, str] | None:
        """Beat, then (rank 0's agent) look at the others' beats: (rank, in words) of an agent found stopped, else
        None. Another agent's beat that the store does not answer (``BoundedStore``'s TimeoutError) names rank 0's,
        the store's host; a store that is gone (its host killed) is srun's to see, not this."""
        try:
            store.add(alive(self.rank), 1)
            found = self.stale(store, now) if self.rank == 0 else None
        except TimeoutError:
            return None if self.rank == 0 else (0, stopped_agent(0, CALL_BOUND_S, host=True))
        except (OSError, RuntimeError, ValueError):
            return None
        return None if found is None else (found[0], stopped_agent(*found, host=False))

    def stale(self, store: AgentStore, now: float) -> tuple[int, float] | None:
        """(rank, seconds) of another agent whose count has stood still ``AGENT_STALE_S`` (``NEVER_BEAT_S`` while it
        has never beaten: its warm-up imports come first), else None. Not judged: one that ended (its exit barrier),
        and any while a failure of this agent's generation is being decided (the deciding agent is busy in it: every
        clock starts again)."""
        at = proto.at(self.rank)
        generation = int(store.get(at)) if store.check([at]) else 0
        if store.check([proto.claim(generation)]):
            self.seen.clear()
            return None
        for rank, count in self.counts(store).items():
            held = self.seen.get(rank)
            if held is None or held[0] != count:
                self.seen[rank] = (count, now)
            elif now - held[1] >= (AGENT_STALE_S if count else NEVER_BEAT_S) and not store.check([proto.ended(rank)]):
                return rank, now - held[1]
        return None

    def counts(self, store: AgentStore) -> dict[int, int]:
        """Every other rank's beat count (0: not beaten yet). The first look adds 0 to each key (a rank that has not
        beaten yet has none, and a get of a missing key would wait); every later one reads them all in one round
        trip."""
        others = [rank for rank in range(self.world_size) if rank != self.rank]
        if not self.made:
            counts = {rank: store.add(alive(rank), 0) for rank in others}
            self.made = True
            return counts
        values = store.multi_get([alive(rank) for rank in others])
        return {rank: int(value) for rank, value in zip(others, values, strict=True)}


def stopped_agent(rank: int, seconds: float, *, host: bool) -> str:
    """In words: rank ``rank``'s agent is stopped (``host``: its store gave no answer for ``seconds``)."""
    if host:
        return f"rank {rank}'s agent (the agents' store's host) gave no answer for {seconds:.0f} s (stopped?)"
    return f"rank {rank}'s agent gave no sign of life for {seconds:.1f} s (stopped?)"


def stopped_agent_rank(fallback: str | None) -> tuple[int, str] | None:
    """(rank, :func:`stopped_agent`'s words) of an ``agent_stopped`` fallback (``restart_fallback``), else None."""
    found = re.match(r"agent_stopped: (rank (\d+)'s agent .*?\(stopped\?\))", fallback or "")
    return (int(found.group(2)), found.group(1)) if found else None
