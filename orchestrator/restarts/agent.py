"""The agent of one task of orch's entrypoint (``launcher.restart: in-process``): it stays alive across
the attempts of its rank and forks the rank's worker for each one, so a restart imports nothing.

The task process (srun's task, or one process of ``orch run``) imports torch (no CUDA), hosts (rank 0)
or joins the step's store at MASTER_PORT, then forks the worker, which trains through the shared
entrypoint (``restarts/worker.py``: one process group per generation, under the store prefix
:func:`~orchestrator.restarts.protocol.prefix`). :func:`supervise` returns :class:`Forked` in the forked
process (with its :class:`~orchestrator.restarts.generation.Worker`; the caller runs the worker's body, and
the process ends as that body does) and :class:`Ends` in the agent: nothing is handed over through a module
global. The agent watches its worker:

- the worker exits 0 (completed, or preempted with a checkpoint): the agent exits 0;
- the worker fails (an exception, killed by a signal, or stopped past ``STOPPED_GRACE_S``, which the agent
  turns into SIGKILL: gloo cannot abort a collective, but a peer's closed sockets end it at once for the
  others): the agent claims the worker's generation (``restarts/decide.py``), records the attempt
  (``restarts/recovery.py``, with ``in_process``), asks the restart policy (the budget of ``--max-restarts``
  is the step-level one's) and publishes the decision. On a restart it forks a new worker for the next
  generation; the other ranks' workers stay in their processes and form the next generation with it.
  Otherwise the agent ends as its worker did (the same exit code or signal), and the step-level restart
  takes over, as without agents (:data:`~orchestrator.restarts.protocol.FALLBACKS` names why, in ``restart_fallback``);
- the worker gave up on a collective with nothing else failing (a deadlock): fallback;
- the worker is left behind: a restart of its generation was decided, and it has said no lost peer
  ``LEFT_BEHIND_S`` later. It waits in a collective on a survivor that has gone on (gloo's algorithms pair
  ranks: only the failed rank's partners see its sockets close; the others wait for ``collective_timeout``,
  measured at 8 ranks and more): the agent kills it and forks its next generation's worker. An agent whose
  worker's step counter stood still after a peer's claim of its generation says it is behind first
  (:meth:`_Agent._say_behind`: the deciding agent need not wait for its record) and replaces it at the decision.

The agent writes no outcome record of its own: each worker does (its pid), as the task did before.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.env import distenv
from orchestrator.restarts import heartbeat
from orchestrator.restarts import protocol as proto
from orchestrator.restarts.decide import Decider
from orchestrator.restarts.generation import Worker, begin
from orchestrator.restarts.store import AgentStore, BoundedStore
from orchestrator.spec.runconfig import RunConfig
from orchestrator.task.outcome import RECORDER
from orchestrator.task.preempt import SIGNALS, PreemptFlag
from orchestrator.task.reaper import end_group, lead_group_and_die_with

if TYPE_CHECKING:
    from orchestrator.env.distenv import DistEnv


@dataclass(frozen=True)
class Ends:
    """:func:`supervise` in the agent: it has ended (exit barrier passed); the task exits with ``code``."""

    code: int


@dataclass(frozen=True)
class Forked:
    """:func:`supervise` in a worker the agent forked: this process goes on as ``worker`` (the caller runs the
    worker's body, whose errors and exit code are the process's own, as any task's)."""

    worker: Worker


def supervise(cfg: RunConfig, env: DistEnv, job_dir: Path, store: AgentStore, start_worker: Callable[[int], None],
              *, warm_up: Callable[[], None] = lambda: None,
              host_port: Callable[[], int] | None = None) -> Ends | Forked:
    """Fork and watch the rank's workers: :class:`Ends` in the agent, :class:`Forked` in each worker it forks
    (which then holds nothing of the agent: its state and its store are dropped on the way out of here).

    ``host_port`` (a script's warm restarts; rank 0: the port of a fresh store it hosts): every rank's worker
    is restarted in each generation, as torchrun restarts the whole world, rendezvousing at that port."""
    base = distenv.restart_count({distenv.ATTEMPT_VAR: os.environ.get(distenv.ATTEMPT_VAR, "0")})
    agent = _Agent(cfg, env, job_dir, store, base, start_worker, script=cfg.script is not None, host_port=host_port)
    worker = agent.fork(0)
    if worker is not None:
        return Forked(worker)
    RECORDER.path = None  # the worker keeps the rank's record; the agent writes none
    signal.signal(SIGNALS[cfg.launcher.preempt_signal], lambda signum, frame: agent.send(signum))  # to the worker
    warm_up()  # what a replaced worker would import again: imported here, once, after the first fork
    chosen = agent.watch()
    if isinstance(chosen, Ends) and agent.stale is None:  # the agent ends (a worker forked later goes on); not
        # after it found an agent stopped: that one would never say it ended
        agent.exit_barrier(proto.EXIT_WAIT_S if chosen.code == 0 else proto.FAILED_EXIT_WAIT_S)
    return chosen if agent.stale is None else Ends(1)  # an agent found stopped: the step ends, by step


@dataclass
class _Agent:
    cfg: RunConfig
    env: DistEnv
    job_dir: Path
    store: AgentStore
    base: int
    start_worker: Callable[[int], None]  # in the child: the outcome record and clock of the new worker
    script: bool = False  # a script: the whole world restarts in each generation (torchrun's semantics)
    host_port: Callable[[], int] | None = None  # rank 0 of a script: host the next world's store, its port
    pid: int = 0
    generation: int = 0
    stopped_since: float | None = None
    began: float = field(default_factory=time.time)  # when the current generation started
    hung: heartbeat.Watch | None = None  # the worker's training steps (a running rank that stopped stepping)
    preempted: bool = False  # the preemption signal came: every later worker starts with its flag set
    behind_since: float | None = None  # when a restart of the worker's generation was first seen undone by it
    claim_seen: float | None = None  # when a claim of the still worker's generation was first seen
    said_behind: int | None = None  # the generation whose failure this agent said its worker is behind in
    stale: int | None = None  # the rank whose agent this one found stopped (the step ends)
    decider: Decider = field(init=False, repr=False)  # what this agent decides when its worker fails
    agents: heartbeat.Agents = field(init=False, repr=False)  # the agents' own beats

    def __post_init__(self) -> None:
        if not isinstance(self.store, BoundedStore):  # a store host that hangs must not hang this agent
            self.store = BoundedStore(self.store)
        self.decider = Decider(self.cfg, self.env, self.job_dir, self.store, self.base, script=self.script)
        self.agents = heartbeat.Agents(self.env.rank, self.env.world_size)

    def fork(self, generation: int) -> Worker | None:
        self.generation, self.began = generation, time.time()
        self.claim_seen = self.said_behind = None
        world = self._world(generation) if self.script and generation else None
        self.store.set(proto.at(self.env.rank), str(generation))  # a worker that dies before it says so: charged here
        sys.stdout.flush()
        sys.stderr.flush()
        parent, beat = os.getpid(), heartbeat.Heartbeat()
        held = {SIGNALS[self.cfg.launcher.preempt_signal]}  # until the worker's own handler is in place
        signal.pthread_sigmask(signal.SIG_BLOCK, held)
        pid = os.fork()
        if pid:
            self.pid, self.hung = pid, heartbeat.Watch(beat)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, held)  # one that came meanwhile: forwarded to it now
            return None
        lead_group_and_die_with(parent)  # its DataLoader's workers end with it; it ends with its agent
        flag = PreemptFlag(self.cfg.launcher.preempt_signal).install()  # the worker's own, from now on
        if self.preempted:  # the signal came when no worker was there to get it (between two generations)
            flag.request()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)
        timeout = self.cfg.launcher.collective_timeout  # a survivor waits until a hung rank's agent could decide
        worker = Worker(rank=self.env.rank, generation=generation, base_attempt=self.base,
                        store_addr=self.env.master_addr, store_port=self.env.master_port,
                        wait_s=max(10.0, heartbeat.hung_after(timeout) - timeout + 5), flag=flag,
                        beat=beat, on_restart=self.start_worker)
        if world is not None:  # the script's rendezvous: a client of the store rank 0's agent hosts (torchrun's)
            os.environ.update({"MASTER_ADDR": world[0], "MASTER_PORT": str(world[1]),
                               "TORCHELASTIC_USE_AGENT_STORE": "True"})
        begin(self.base, generation, self.start_worker)
        return worker

    def _world(self, generation: int) -> tuple[str, int]:
        """Where a script's world of ``generation`` meets (MASTER_ADDR, MASTER_PORT): a fresh store (keys of the
        world before would mislead it) that rank 0's agent hosts, agreed through the agents' store."""
        if self.host_port is not None:
            chosen = self.env.master_addr, self.host_port()
            self.store.set(proto.port(generation), proto.encode_world(*chosen))
            return chosen
        deadline = time.monotonic() + self.cfg.launcher.init_timeout
        while not self.store.check([proto.port(generation)]) and time.monotonic() < deadline:
            time.sleep(proto.POLL_S)
        return proto.parse_world(self.store.get(proto.port(generation)))

    def watch(self) -> Ends | Forked:
        """Watch the worker, and fork the next generation's after a failure that is restarted: :class:`Ends` in
        the agent, :class:`Forked` in a worker forked here."""
        while True:
            code = self._wait()
            if self.stale is not None:  # an agent is stopped: the step ends, the step-level restart blames its rank
                return Ends(1)
            if code == 0:
                return Ends(0)
            # None: another rank failed and this rank's worker was stopped, the world starts again
            nxt = self.generation + 1 if code is None else self._after_failure(code)
            if nxt is None:
                return Ends(_end_as(code or 1))
            try:
                worker = self.fork(nxt)
            except (OSError, RuntimeError, ValueError):  # rank 0's agent is gone: no next world's store
                self.decider.fall_back("store_lost")
                return Ends(_end_as(code or 1))
            if worker is not None:  # the new worker leaves through supervise's caller
                return Forked(worker)

    def send(self, signum: int) -> None:
        """The preemption signal, to the worker; kept for the next worker (one may be forked after it)."""
        self.preempted = True
        self._signal(signum)

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signum)

    def _wait(self) -> int | None:
        """The worker's exit status as Popen says it (-N: signal N); a worker stopped too long is killed.
        None: a script's other rank failed and the world restarts (this worker was stopped for it), or the worker
        was left behind in a generation whose restart was decided (killed: :meth:`_left_behind`)."""
        polls = 0
        while True:
            code = self._reap()
            if code is not None:
                end_group(self.pid)  # what the worker left (its children) ends with it
                return code
            self._check_stopped()
            polls += 1
            if polls % heartbeat.ALIVE_POLLS == 0 and not self._agents_alive():
                return 1
            if self.script:
                if polls % 5 == 0 and self._world_restarts():
                    self._stop_worker()
                    return None
            elif self._replaced_behind(polls):
                return None
            time.sleep(proto.POLL_S)

    def _agents_alive(self, *, worker: bool = True) -> bool:
        """Beat, and look at the other agents' (:meth:`heartbeat.Agents.look`). False when an agent is stopped: said
        (``restart_fallback``: the step-level restart blames its rank), and this rank's ``worker`` stopped."""
        found = self.agents.look(self.store, time.monotonic())
        if found is None:
            return True
        self.stale, how = found
        print(f"orch: rank {self.env.rank}: {how}; the step ends", file=sys.stderr, flush=True)
        self.decider.fall_back("agent_stopped", said=f"{how}: ")
        if worker:
            self._stop_worker()
        return False

    def _replaced_behind(self, polls: int) -> bool:
        """orch's entrypoint: say the worker is behind (:meth:`_say_behind`, every ``BEHIND_POLLS``), and whether it
        was left behind and replaced (:meth:`_left_behind`: every ``LEFT_BEHIND_POLLS``, every ``BEHIND_POLLS``
        once said)."""
        if polls % proto.BEHIND_POLLS == 0:
            self._say_behind()
        every = proto.BEHIND_POLLS if self.said_behind is not None else proto.LEFT_BEHIND_POLLS
        return polls % every == 0 and self._left_behind()

    def _reap(self) -> int | None:
        """Reap every child that ended (the agent is a subreaper: a generation's orphans come to it); the
        worker's exit status when it is among them."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return None
            if pid == 0:
                return None
            if pid == self.pid:
                return os.waitstatus_to_exitcode(status)

    def _world_restarts(self) -> bool:
        try:
            return self._restart_decided(self.generation)
        except (OSError, RuntimeError):
            return False

    def _restart_decided(self, generation: int) -> bool:
        """Whether the store holds a restart decided for ``generation`` (the store's errors go to the caller)."""
        key = proto.decision(generation)
        return self.store.check([key]) and proto.parse_decision(self.store.get(key))[0]

    def _left_behind(self) -> bool:
        """The worker is still in a generation whose restart was decided, has said no lost peer, and
        ``LEFT_BEHIND_S`` have passed since this agent saw the decision (at once: this agent said it is behind in
        that generation): it is killed, and this agent's generation is that one (its caller forks the next)."""
        rank = self.env.rank
        try:
            at = int(self.store.get(proto.at(rank)))
            restart = self._restart_decided(at)
            said = restart and self.store.check([proto.lost(at, rank)])
        except (OSError, RuntimeError, ValueError):  # the store is gone or busy: the other checks still hold
            return False
        if not restart or said:
            self.behind_since = None
            return False
        now = time.monotonic()
        self.behind_since = self.behind_since or now
        if now - self.behind_since < proto.LEFT_BEHIND_S and self.said_behind != at:  # said: known behind already
            return False
        print(f"orch: rank {rank}: the worker (pid {self.pid}) is still in generation {at}, whose restart was "
              f"decided {now - self.behind_since:.1f} s ago (it waits on a peer that went on); replacing it",
              file=sys.stderr, flush=True)
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        end_group(self.pid)
        self.generation, self.behind_since, self.hung = at, None, None
        return True

    def _say_behind(self) -> None:
        """Report the worker behind (:func:`~orchestrator.restarts.protocol.reported`) once a failure of its
        generation is claimed and, from when this agent saw the claim, its armed counter has stood still and it
        reported nothing for ``Watch.behind_after`` (restarts/heartbeat.py): the deciding agent need not wait
        ``REPORT_WAIT_S`` for a record that comes only after its decision. The store is asked only while the worker
        stands still that long (a worker that steps costs the store nothing)."""
        watch, now = self.hung, time.monotonic()
        quiet = watch.quiet_for(now) if watch is not None else 0.0
        after = watch.behind_after() if watch is not None else None
        if after is None or quiet < after:
            self.claim_seen = None
            return
        rank = self.env.rank
        try:
            at = int(self.store.get(proto.at(rank)))
            if self.said_behind == at:
                return
            self.said_behind = None  # (a survivor that reported after all has gone on to a later generation)
            if not self.store.check([proto.claim(at)]) or self.store.check([proto.reported(at, rank)]):
                self.claim_seen = None
                return
            self.claim_seen = self.claim_seen or now
            if now - self.claim_seen >= after:
                self.store.set(proto.reported(at, rank), "behind")
                self.said_behind = at
        except (OSError, RuntimeError, ValueError):  # the store is gone or busy: the decider's bound still holds
            return

    def _stop_worker(self, grace: float = 2.0) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds, as torchrun stops a world's workers: to the worker's
        whole process group (its DataLoader's workers too)."""
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if os.waitpid(self.pid, os.WNOHANG)[0]:
                end_group(self.pid)
                return
            time.sleep(proto.POLL_S)
        end_group(self.pid)
        os.waitpid(self.pid, 0)

    def _check_stopped(self) -> None:
        """A worker stopped (SIGSTOP) for ``STOPPED_GRACE_S``, or running with no training step while its peers
        gave up waiting (``Watch.stalled``), is hung: killed, so its rank restarts in-process."""
        now, timeout = time.monotonic(), self.cfg.launcher.collective_timeout
        quiet = self.hung.stalled(now, timeout, self.store, self.env.rank) if self.hung is not None else None
        if quiet is not None:
            return self._kill_hung(f"made no training step for {quiet:.0f} s", quiet)
        try:
            with open(f"/proc/{self.pid}/stat", encoding="ascii", errors="replace") as fh:
                stopped = proto.process_state(fh.read()) == "T"
        except OSError:
            return None
        self.stopped_since = (self.stopped_since or now) if stopped else None
        if self.stopped_since is not None and now - self.stopped_since >= proto.STOPPED_GRACE_S:
            self._kill_hung(f"is stopped for {proto.STOPPED_GRACE_S:g} s", now - self.stopped_since)
        return None

    def _kill_hung(self, why: str, seconds: float) -> None:
        print(f"orch: rank {self.env.rank}: the worker (pid {self.pid}) {why} (hung); killing it", file=sys.stderr,
              flush=True)
        self._signal(signal.SIGKILL)
        self.stopped_since, self.hung, self.decider.hung_s = None, None, round(seconds, 3)

    def _after_failure(self, code: int) -> int | None:
        """The next generation to start, or None (fall back: the agent ends as its worker did)."""
        return self.decider.after_failure(code, generation=self.generation, began=self.began)

    def exit_barrier(self, wait_s: float) -> None:
        """Say this rank's agent ends, then wait until every rank's has (at most ``wait_s``; not for an agent found
        stopped): rank 0's hosts the store, and a peer that fails after rank 0's worker returned must still find it."""
        keys, polls, deadline = [proto.ended(r) for r in range(self.env.world_size)], 0, time.monotonic() + wait_s
        try:
            self.store.set(proto.ended(self.env.rank), "1")
            while not self.store.check(keys):
                polls += 1
                if polls % heartbeat.ALIVE_POLLS == 0 and not self._agents_alive(worker=False):
                    return
                if time.monotonic() >= deadline:
                    print(f"orch: rank {self.env.rank}: not every rank's agent ended within {wait_s:g} s; leaving",
                          file=sys.stderr, flush=True)
                    return
                time.sleep(proto.POLL_S)
        except (OSError, RuntimeError, ValueError):  # the store is gone: nobody is left to wait for
            return


def _end_as(code: int) -> int:
    """The agent ends as its worker did: the same exit code, or death by the same signal."""
    if code < 0:
        with contextlib.suppress(ValueError, OSError):
            signal.signal(-code, signal.SIG_DFL)
            os.kill(os.getpid(), -code)
        return 128 - code
    return code

