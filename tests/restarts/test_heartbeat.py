"""restarts/heartbeat.py: a worker's training steps, seen by its agent through memory shared across a real fork, and
the agent's verdict: a worker that rests (between epochs, waiting for a decision) or steps is never hung; an
armed counter that stands still is hung once a peer gave up waiting for it and the others had time to give up
too, or after twice the collective timeout in any case."""

from __future__ import annotations

import os

from support import DictStore

from orchestrator.restarts import heartbeat
from orchestrator.restarts import protocol as proto
from orchestrator.restarts.heartbeat import Heartbeat, Watch


def test_a_forked_workers_ticks_and_rest_reach_its_agent() -> None:
    beat = Heartbeat()
    pid = os.fork()
    if pid == 0:  # the worker (its Worker handle carries the beat made before the fork)
        for _ in range(3):
            beat.tick()
        os._exit(0)
    os.waitpid(pid, 0)
    assert beat.read() == (3, True)
    beat.rest()
    assert beat.read() == (3, False)


def test_a_rank_no_agent_watches_ticks_nothing() -> None:
    beat = heartbeat.NoBeat()
    beat.tick()
    beat.rest()
    assert vars(beat) == {}  # nothing kept, nothing shared


def test_a_resting_or_stepping_worker_is_never_hung() -> None:
    beat, store = Heartbeat(), DictStore()
    store.set(proto.at(1), "0")
    store.add(proto.gave_up(0), 1)
    watch = Watch(beat)
    assert watch.stalled(0.0, 5, store, 1) is None  # not armed yet: starting up
    assert watch.stalled(100.0, 5, store, 1) is None
    beat.tick()
    assert watch.stalled(101.0, 5, store, 1) is None
    beat.tick()
    assert watch.stalled(108.0, 5, store, 1) is None  # it moved: quiet from now
    beat.rest()
    assert watch.stalled(200.0, 5, store, 1) is None  # resting (evaluation, a checkpoint, a decision)


def test_a_still_counter_is_hung_once_a_peer_gave_up_and_the_others_had_time_to() -> None:
    beat, store = Heartbeat(), DictStore()
    store.set(proto.at(1), "2")  # the worker is in generation 2
    watch = Watch(beat)
    beat.tick()
    assert watch.stalled(0.0, 10, store, 1) is None
    assert watch.stalled(11.0, 10, store, 1) is None  # quiet for a timeout, but no peer gave up
    store.add(proto.gave_up(1), 1)  # an older generation's: not this one's
    assert watch.stalled(12.5, 10, store, 1) is None
    store.add(proto.gave_up(2), 1)
    assert watch.stalled(14.0, 10, store, 1) is None  # seen now; the others have settle_s to give up too
    assert heartbeat.settle_s(10) == 5.0
    assert watch.stalled(18.5, 10, store, 1) is None
    assert watch.stalled(19.0, 10, store, 1) == 19.0
    beat.tick()  # it stepped after all: its quiet time and the peer's giving up start over
    assert watch.stalled(30.0, 10, store, 1) is None
    assert watch.stalled(41.0, 10, store, 1) is None and watch.stalled(46.5, 10, store, 1) == 16.5


def test_a_still_counter_is_hung_after_twice_the_timeout_without_a_word_from_the_peers() -> None:
    beat = Heartbeat()
    watch = Watch(beat)
    beat.tick()
    watch.stalled(0.0, 5, DictStore(), 0)
    assert watch.stalled(9.9, 5, DictStore(), 0) is None
    assert watch.stalled(10.0, 5, DictStore(), 0) == 10.0  # no store answer needed (the store may be gone)
    assert heartbeat.hung_after(5) == 10.0


def test_a_workers_step_time_is_learnt_from_its_ticks_and_sets_when_it_is_behind() -> None:
    """The agent learns how long the worker's steps take (the slowest recent one, 10% less a step since) and takes
    a still worker to be behind after BEHIND_STEPS of them (BEHIND_MIN_S at least); before any step: never."""
    beat = Heartbeat()
    watch = Watch(beat)
    beat.tick()
    watch.quiet_for(0.0)
    assert watch.behind_after() is None  # one look: no step time yet
    beat.tick()
    watch.quiet_for(0.5)
    assert watch.step_s == 0.5 and watch.behind_after() == proto.BEHIND_STEPS * 0.5
    for look in (0.51, 0.52):  # fast steps: the estimate decays from the slow one, 10% a step
        beat.tick()
        watch.quiet_for(look)
    assert watch.step_s is not None and abs(watch.step_s - 0.5 * 0.9 * 0.9) < 1e-9
    beat.rest()
    watch.quiet_for(10.0)
    beat.tick()  # armed again after a rest (evaluation): the time rested is no step
    watch.quiet_for(30.0)
    assert watch.step_s is not None and watch.step_s < 0.5
    tiny = Watch(Heartbeat())
    tiny.beat.tick()
    tiny.quiet_for(0.0)
    tiny.beat.tick()
    tiny.quiet_for(0.001)
    assert tiny.behind_after() == proto.BEHIND_MIN_S


def test_rank_0s_agent_names_an_agent_whose_beat_stood_still_and_no_other() -> None:
    """An agent's count that stands still ``AGENT_STALE_S`` is a stopped agent; one that moves, one that never beat
    (its warm-up) before ``NEVER_BEAT_S``, one that ended (its exit barrier), and any while a failure is being decided
    are not."""
    store, stale = DictStore(), heartbeat.AGENT_STALE_S
    zero, one, two = (heartbeat.Agents(rank, 4) for rank in (0, 1, 2))
    store.set(proto.at(0), "3")
    one.look(store, 0.0)
    two.look(store, 0.0)
    assert zero.look(store, 0.0) is None
    two.look(store, stale)  # rank 2 beats on; rank 1 stands still; rank 3 never beat
    assert zero.look(store, stale - 0.1) is None
    found = zero.look(store, stale + 0.1)
    assert found is not None and found[0] == 1, found
    assert found[1].startswith(f"rank 1's agent gave no sign of life for {stale + 0.1:.1f} s"), found
    assert heartbeat.stopped_agent_rank(f"agent_stopped: {found[1]}: the step ends\n") == (1, found[1])
    store.set(proto.ended(1), "1")  # it ended: its beats stop, it is not stopped
    assert zero.look(store, stale + 0.2) is None
    store.data.pop(proto.ended(1))
    store.set(proto.claim(3), "1")  # rank 0's generation is being decided: every clock starts again
    assert zero.look(store, stale + 0.3) is None
    store.data.pop(proto.claim(3))
    assert zero.look(store, 2 * stale) is None and zero.look(store, 3 * stale + 1) is not None
    never, quiet = heartbeat.Agents(0, 2), DictStore()  # rank 1 has not beaten yet (its warm-up imports)
    assert never.look(quiet, 0.0) is None and never.look(quiet, stale + 1) is None
    late = never.look(quiet, heartbeat.NEVER_BEAT_S + 0.1)
    assert late is not None and late[0] == 1, late


def test_an_agent_whose_beat_gets_no_answer_names_the_stores_host() -> None:
    """The store's host, rank 0's agent, is stopped: another agent's beat ends in BoundedStore's TimeoutError and
    names rank 0; a store that is gone (refused) names nobody (srun's --kill-on-bad-exit ends the step)."""

    class Unanswered(DictStore):
        def __init__(self, error: OSError) -> None:
            super().__init__()
            self.error = error

        def add(self, key: str, amount: int) -> int:
            raise self.error

    found = heartbeat.Agents(1, 2).look(Unanswered(TimeoutError("no answer")), 0.0)
    assert found is not None and found[0] == 0 and "the agents' store's host" in found[1], found
    assert heartbeat.Agents(1, 2).look(Unanswered(ConnectionRefusedError()), 0.0) is None
    assert heartbeat.stopped_agent_rank("peer_only: the worker gave up") is None
