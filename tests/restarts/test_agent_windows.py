"""The windows of an in-process restart (restarts/agent.py), with real forked processes where they matter: a worker
that dies inside its restart is charged to the generation it was starting; the agent that claims a generation
always publishes a decision; a worker is the leader of its own process group, dies with its agent, and takes
its children with it when it is stopped; every generation's leftovers are reaped."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from support import DictStore

from orchestrator.records.restarts.attempts import read_attempts
from orchestrator.restarts import agent
from orchestrator.restarts import protocol as proto
from orchestrator.restarts.decide import Decider
from orchestrator.restarts.generation import Worker
from orchestrator.restarts.heartbeat import Heartbeat
from orchestrator.spec.cluster import Launcher
from orchestrator.task.preempt import PreemptFlag
from orchestrator.task.reaper import alive


def make_agent(tmp_path: Path, store: Any, rank: int = 1, max_restarts: int = 3) -> Any:
    from orchestrator.env.distenv import DistEnv

    cfg = type("Cfg", (), {"launcher": Launcher(collective_timeout=5, max_restarts=max_restarts), "mode": "local",
                           "restarts": 0, "world_size": 2, "tasks_per_node": 2, "script": None})()
    env = DistEnv(rank=rank, local_rank=rank, world_size=2, local_world_size=2, node_rank=0, num_nodes=1,
                  master_addr="127.0.0.1", master_port=29500)
    return agent._Agent(cfg, env, tmp_path, store, 0, lambda g: None)


def wait_for(check: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return bool(check())


# --- a failure inside the restart ---------------------------------------------------------------------------

def test_a_worker_that_dies_before_it_wrote_its_generation_is_charged_to_that_generation(tmp_path: Path) -> None:
    """Generation 1 was decided (a restart); the agent forks generation 2's worker, which dies at once, before
    it said where it is: the agent claims generation 2, records it and decides, instead of forking again."""
    store = DictStore()
    store.set(proto.at(1), "1")
    store.add(proto.claim(1), 1)
    store.set(proto.decision(1), proto.RESTART)
    ag = make_agent(tmp_path, store)
    if ag.fork(2) is not None:  # pragma: no cover - the worker: dies before it writes anything
        os._exit(1)
    code = ag._wait()
    assert code == 1
    assert store.get(proto.at(1)) == b"2"  # the agent said where its worker is before it forked it
    nxt = ag._after_failure(code)
    assert store.get(proto.claim(2)) == b"1"  # claimed (this agent won), not taken for generation 1's
    assert proto.decision(2) in store.data  # and decided
    assert nxt == 3 and [a["attempt"] for a in read_attempts(tmp_path)] == [2]  # recorded, then restarted


def test_a_survivor_writes_its_next_generation_before_its_restart_begins() -> None:
    """A survivor's worker says it is in generation g+1 before anything else of its restart (its record, its
    clock): a death in between is charged to g+1."""
    seen: list[str] = []
    worker = Worker(rank=1, generation=3, base_attempt=0, store_addr="127.0.0.1", store_port=1, wait_s=1.0,
                    flag=PreemptFlag(), beat=Heartbeat(), on_restart=lambda g: seen.append(f"record {g}"))
    worker.restart(4, announce=lambda g: seen.append(f"at {g}"))
    assert seen == ["at 4", "record 4"] and worker.generation == 4


class Boom(Exception):
    pass


@pytest.mark.parametrize("error", [Boom("an unexpected bug"), KeyError("rank"), OSError("disk")])
def test_the_claimant_always_publishes_a_decision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 error: Exception) -> None:
    """Whatever fails while the claimant decides, the survivors get a decision (a stop) at once rather than
    waiting for one that will not come; the agent ends as its worker did."""
    def broken(self: Any, generation: int, code: int, began: float) -> tuple[bool, str]:
        raise error

    monkeypatch.setattr(Decider, "_decide", broken)
    store = DictStore()
    store.set(proto.at(1), "0")
    assert make_agent(tmp_path, store)._after_failure(-9) is None
    restart, why = proto.parse_decision(store.get(proto.decision(0)))
    assert not restart and type(error).__name__ in why, why


# --- the worker's processes ---------------------------------------------------------------------------------

def in_child(body: Any) -> int:
    """Run ``body`` in a forked child of the test (which never returns into pytest): its pid."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            body()
        finally:
            os._exit(0)
    return pid


def test_supervise_says_forked_in_the_worker_and_ends_in_the_agent(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """One explicit result per role, no module global: in the forked process ``supervise`` returns ``Forked``
    with that worker's handle (its rank, generation 0, its own preemption flag), and the caller runs the worker's
    body there; in the agent ``Ends`` with the worker's exit code, once the exit barrier is passed."""
    from orchestrator.env.distenv import DistEnv
    from orchestrator.task.outcome import RECORDER

    monkeypatch.setattr(RECORDER, "path", RECORDER.path)  # the agent gives up the rank's record
    preempt = agent.SIGNALS[Launcher().preempt_signal]
    handler = signal.getsignal(preempt)  # the agent forwards the preemption signal to its worker
    cfg = type("Cfg", (), {"launcher": Launcher(max_restarts=1), "script": None})()
    env = DistEnv(rank=0, local_rank=0, world_size=1, local_world_size=1, node_rank=0, num_nodes=1,
                  master_addr="127.0.0.1", master_port=29500)
    seen = tmp_path / "worker"
    try:
        role = agent.supervise(cfg, env, tmp_path, DictStore(), lambda g: None)
        if isinstance(role, agent.Forked):  # pragma: no cover - the worker: its body
            try:
                w = role.worker
                seen.write_text(f"{w.rank} {w.generation} {type(w.flag).__name__} {w.flag.requested}")
            finally:
                os._exit(0)  # the worker completed
    finally:
        signal.signal(preempt, handler)
    assert role == agent.Ends(0)
    assert seen.read_text() == "0 0 PreemptFlag False"


def test_stopping_a_worker_ends_its_whole_process_group(tmp_path: Path) -> None:
    """A worker leads its own process group; stopping it (a world's restart) ends what it started too (a
    DataLoader's workers, here a child that ignores SIGTERM), not the worker's pid alone."""
    ag = make_agent(tmp_path, DictStore())
    mark = tmp_path / "child"
    if ag.fork(0) is not None:  # pragma: no cover - the worker
        def child() -> None:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            time.sleep(60)
        try:
            mark.write_text(str(in_child(child)))
            time.sleep(60)
        finally:
            os._exit(0)
    assert wait_for(lambda: mark.exists() and mark.read_text() != "")  # written, not just made: no empty read
    child = int(mark.read_text())
    assert os.getpgid(ag.pid) == ag.pid and os.getpgid(child) == ag.pid  # the worker's own group
    ag._stop_worker(grace=0.3)
    assert wait_for(lambda: not alive(child)), "the worker's child outlived it"


def test_a_worker_dies_with_its_agent(tmp_path: Path) -> None:
    """kill -9 of the agent: its worker gets SIGKILL from the kernel (PR_SET_PDEATHSIG), rather than training
    on alone (and holding the store's inherited socket open) until a collective fails."""
    mark = tmp_path / "worker"

    def run_agent() -> None:
        ag = make_agent(tmp_path, DictStore())
        if ag.fork(0) is not None:  # the worker
            time.sleep(60)
            os._exit(0)
        mark.write_text(str(ag.pid))
        time.sleep(60)

    helper = in_child(run_agent)
    assert wait_for(lambda: mark.exists() and mark.read_text() != "")  # written, not just made: no empty read
    worker = int(mark.read_text())
    assert alive(worker)
    os.kill(helper, signal.SIGKILL)
    os.waitpid(helper, 0)
    assert wait_for(lambda: not alive(worker)), "the worker outlived its agent"


def test_the_agent_reaps_what_a_generation_left(tmp_path: Path) -> None:
    """Generation 0's worker fails and leaves a child, which the agent (a subreaper) inherits: the agent ends
    it and reaps it while it watches generation 1, rather than keeping a zombie per generation."""
    from orchestrator.task.reaper import _parent_map, become_subreaper

    out = tmp_path / "children"

    def run_agent() -> None:
        become_subreaper()
        ag = make_agent(tmp_path, DictStore())
        if ag.fork(0) is not None:  # generation 0: a child that outlives the worker, then a failure
            in_child(lambda: time.sleep(0.3))
            os._exit(1)
        code = ag._wait()
        if ag.fork(1) is not None:  # generation 1: trains a while
            time.sleep(1.5)
            os._exit(0)
        last = ag._wait()
        me = os.getpid()
        out.write_text(f"{code} {last} " + ",".join(str(p) for p, parent in _parent_map().items() if parent == me))

    helper = in_child(run_agent)
    os.waitpid(helper, 0)
    code, last, left = out.read_text().split(" ")
    assert (code, last) == ("1", "0")
    assert left == "", f"processes of generation 0 still under the agent: {left}"


# --- the preemption signal between two generations -------------------------------------------------------------

def test_a_preemption_signal_between_two_generations_reaches_the_next_one(tmp_path: Path) -> None:
    """The signal arrives after a worker ended and before the next one is forked (no worker to forward it
    to): the next generation's worker starts with its flag set, so it checkpoints and ends as preempted at its
    first step, rather than training on as if the signal never came."""
    ag = make_agent(tmp_path, DictStore())
    signum = ag.cfg.launcher.preempt_signal
    if ag.fork(0) is not None:  # pragma: no cover - generation 0 fails at once
        os._exit(1)
    assert ag._wait() == 1
    ag.send(int(agent.SIGNALS[signum]))  # the agent's handler: its worker is gone
    if (worker := ag.fork(1)) is not None:  # pragma: no cover - generation 1: was the signal kept for it?
        os._exit(0 if worker.flag is not None and worker.flag.requested else 3)
    assert ag._wait() == 0, "the preemption signal was dropped between the generations"


# --- the exit barrier ---------------------------------------------------------------------------------------

def test_an_agent_leaves_once_every_ranks_agent_ended_or_the_wait_is_over(tmp_path: Path) -> None:
    import threading

    store = DictStore()
    host = make_agent(tmp_path, store, rank=0)
    later = threading.Timer(0.3, lambda: store.set(proto.ended(1), "1"))  # rank 1's agent ends a moment later
    began = time.monotonic()  # before the timer starts: the 0.3 s are counted from here
    later.start()
    host.exit_barrier(5.0)
    assert 0.3 <= time.monotonic() - began < 5.0 and store.check([proto.ended(0)])
    later.join()
    alone = DictStore()  # rank 1's agent is gone for good: rank 0's leaves after the wait
    began = time.monotonic()
    make_agent(tmp_path, alone, rank=0).exit_barrier(0.5)
    assert 0.5 <= time.monotonic() - began < 3.0


# --- a survivor left behind in the failed generation --------------------------------------------------------

def test_a_worker_left_behind_in_a_decided_generation_is_replaced_and_one_that_said_lost_is_not(
        tmp_path: Path) -> None:
    """A restart of generation 0 is decided. A worker that said it lost its peer is on its way to generation 1 and
    keeps its process; one that said nothing LEFT_BEHIND_S later waits in a collective on a survivor that went on
    (gloo pairs ranks: at 8 ranks such a rank waited collective_timeout): its agent kills it (its whole group)
    and its next generation is forked."""
    store = DictStore()
    ag = make_agent(tmp_path, store)
    if ag.fork(0) is not None:  # pragma: no cover - the worker: stuck
        try:
            time.sleep(60)
        finally:
            os._exit(0)
    assert ag._left_behind() is False  # nothing decided yet
    store.set(proto.decision(0), proto.RESTART)
    store.set(proto.lost(0, ag.env.rank), "1")  # it saw the failure: on its way
    time.sleep(proto.LEFT_BEHIND_S + 0.1)
    assert ag._left_behind() is False and alive(ag.pid)
    del store.data[proto.lost(0, ag.env.rank)]  # it never saw it: left behind
    assert ag._left_behind() is False  # the clock starts when the agent first sees it
    time.sleep(proto.LEFT_BEHIND_S + 0.1)
    worker = ag.pid
    assert ag._left_behind() is True
    assert not alive(worker) and ag.generation == 0  # watch() forks generation 1 next


def test_an_agent_says_its_still_worker_is_behind_once_its_generation_is_claimed_and_replaces_it_at_the_decision(
        tmp_path: Path) -> None:
    """A peer's agent claimed generation 0. A worker that steps is never said behind; one whose counter stands still
    BEHIND_MIN_S (it waits in the failed step's collective on a survivor) is, once its agent has seen the claim that
    long: the deciding agent need not wait REPORT_WAIT_S for it. At the decision it is replaced at once, not
    LEFT_BEHIND_S later."""
    store = DictStore()
    ag = make_agent(tmp_path, store)
    if ag.fork(0) is not None:  # pragma: no cover - the worker: stuck (the test ticks its heartbeat for it)
        try:
            time.sleep(60)
        finally:
            os._exit(0)
    beat = ag.hung.beat
    for _ in range(4):  # it steps (a few ms a step)
        beat.tick()
        ag._say_behind()
        time.sleep(0.01)
    store.add(proto.claim(0), 1)
    until = time.monotonic() + proto.BEHIND_MIN_S * 2
    while time.monotonic() < until:  # still stepping after the claim: not behind
        beat.tick()
        ag._say_behind()
        time.sleep(0.02)
    assert proto.reported(0, ag.env.rank) not in store.data
    after = ag.hung.behind_after()  # BEHIND_MIN_S, or more when this machine made the steps slow
    assert after >= proto.BEHIND_MIN_S
    time.sleep(after + 0.05)  # it stands still: the agent sees the claim now, and waits as long
    ag._say_behind()
    assert proto.reported(0, ag.env.rank) not in store.data
    time.sleep(after + 0.05)
    ag._say_behind()
    assert store.get(proto.reported(0, ag.env.rank)) == b"behind"
    store.set(proto.decision(0), proto.RESTART)
    worker = ag.pid
    assert ag._left_behind() is True  # at once: it was known behind
    assert not alive(worker) and ag.generation == 0
