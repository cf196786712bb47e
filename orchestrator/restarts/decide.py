"""The decision after a worker failed (torch-free): its agent claims the generation, records the attempt and
publishes restart or stop for every rank, or hands the failure to the step-level restart (a fallback).

One :class:`Decider` per agent (``restarts/agent.py``), over the agents' store: ``store.add(claim(g), 1) == 1``
makes one winner however many ranks fail at once; the winner asks ``restarts/recovery.py`` (the budget of
``--max-restarts`` is the step-level one's) and always publishes a decision (``finally``), so that the
survivors never wait for one that will not come.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.env import distenv
from orchestrator.records.atomic import write_text_atomic
from orchestrator.records.restarts.rankoutcome import PEER_FAILURE_EXIT
from orchestrator.records.restarts.seen import Seen
from orchestrator.restarts import protocol as proto
from orchestrator.restarts.store import AgentStore, wait_for
from orchestrator.spec.runconfig import RunConfig

if TYPE_CHECKING:
    from orchestrator.env.distenv import DistEnv


@dataclass
class Decider:
    """What one agent decides when its worker fails (``script``: the whole world restarts in each generation)."""

    cfg: RunConfig
    env: DistEnv
    job_dir: Path
    store: AgentStore
    base: int  # ORCH_ATTEMPT of the step (generation 0)
    script: bool = False
    hung_s: float | None = None  # the agent killed its hung worker: how long it had hung (s)

    def after_failure(self, code: int, *, generation: int, began: float) -> int | None:
        """The next generation to start, or None (fall back: the agent ends as its worker did). ``generation``:
        the one the agent forked last, ``began``: when it started."""
        try:
            key = proto.at(self.env.rank)
            raw = self.store.get(key) if self.store.check([key]) else b""
            generation = int(raw) if raw.strip() else generation
            if code == PEER_FAILURE_EXIT and not self._claimed(generation):
                return self.fall_back("peer_only")  # gave up on a collective, and no rank failed or stopped
            if self.store.add(proto.claim(generation), 1) == 1:  # this rank decides for the generation
                self._publish(generation, code, began)
            decided = self._decision(generation)
        except (OSError, RuntimeError, ValueError):  # the store is gone (rank 0's agent or node)
            return self.fall_back("store_lost")
        except Exception as exc:  # deciding failed (a bug): the decision said so; the agent ends as its worker did
            print(f"orch: rank {self.env.rank}: no in-process restart: deciding failed ({type(exc).__name__}: "
                  f"{exc})", file=sys.stderr, flush=True)
            return None
        if decided is None:
            return self.fall_back("no_decision")
        restart, why = proto.parse_decision(decided)
        if not restart:  # the step ends as the worker did; attempts.json's ``fallback`` says why (orch status)
            return self.fall_back("declined", said=f"{why}: ")
        return generation + 1

    def _publish(self, generation: int, code: int, began: float) -> None:
        """The claimant decides and always publishes the decision (``finally``): a stop when deciding failed,
        so that the survivors never wait for a decision that will not come."""
        restart, why = False, "the deciding agent failed"
        try:
            gone = [r for r in range(self.env.world_size) if r != self.env.rank and self.store.check([proto.ended(r)])]
            restart, why = (False, f"rank {gone[0]} has ended (its part of the step is done)") if gone else \
                self._decide(generation, code, began)
        except BaseException as exc:
            why = f"the deciding agent failed: {type(exc).__name__}: {exc}"
            raise
        finally:
            with contextlib.suppress(OSError, RuntimeError, ValueError):  # the store gone: nothing to tell
                self.store.set(proto.decision(generation), proto.RESTART if restart else proto.encode_stop(why))

    def _claimed(self, generation: int) -> bool:
        """Whether a failed rank's agent claims ``generation`` within ``PEER_GRACE_S``: a worker that only lost
        its peer (a script's rank 0 in a collective) can end before the failed rank's agent saw its own end."""
        return wait_for(self.store, [proto.claim(generation)], proto.PEER_GRACE_S, proto.POLL_S)

    def _decision(self, generation: int) -> bytes | None:
        key, wait_s = proto.decision(generation), max(10.0, float(self.cfg.launcher.collective_timeout))
        return self.store.get(key) if wait_for(self.store, [key], wait_s, proto.POLL_S) else None

    def _decide(self, generation: int, code: int, began: float) -> tuple[bool, str]:
        """Record the attempt that just failed, when it is restarted here (restarts/recovery.py); the verdict."""
        from orchestrator.restarts.recovery import AttemptFacts, end_attempt

        others = [] if self.script else [proto.reported(generation, r) for r in range(self.env.world_size)
                                         if r != self.env.rank]
        # every other rank's report: its record written (a survivor), or behind (blocked in the failed step: it
        # writes nothing before the decision); at most REPORT_WAIT_S for a rank that never answers
        deadline = time.monotonic() + proto.REPORT_WAIT_S
        while others and not self.store.check(others) and time.monotonic() < deadline:
            time.sleep(proto.POLL_S)

        run = distenv.script_run_id(os.environ, "local") if self.cfg.mode == "slurm" else "local"
        facts = AttemptFacts(attempt=self.base + generation, requeue=self.cfg.restarts if self.cfg.mode != "slurm"
                             else distenv.restart_count({k: v for k, v in os.environ.items()
                                                         if k != distenv.ATTEMPT_VAR}),
                             exit_code=code, started=began, run=run if self.cfg.mode == "slurm" else "local",
                             batch_started=_env_time("ORCH_BATCH_START"), hung_s=self.hung_s,
                             seen=Seen(codes={self.env.rank: code}, ended={self.env.rank: time.time()}, run=run,
                                       stopped=frozenset({self.env.rank} if self.hung_s is not None else ()),
                                       stopped_by="its agent (the worker was stopped, hung)"))
        self.hung_s = None
        decision = end_attempt(self.job_dir, self.cfg, facts, in_process=True)
        if not decision.restart:
            return False, decision.message or decision.kind
        print(f"orch: attempt {facts.attempt} {decision.kind} (rank {self.env.rank}, exit {code}); restarting in "
              f"the step's processes from the newest checkpoint (generation {generation + 1})", file=sys.stderr,
              flush=True)
        return True, ""

    def fall_back(self, name: str, said: str = "") -> int | None:
        """Say why the step-level restart takes over, or why nothing is restarted (``said``: what this agent saw,
        before the row's reason; the agent ends as its worker did): None."""
        why = said + proto.FALLBACK_REASONS[name]
        print(f"orch: rank {self.env.rank}: no in-process restart: {why}", file=sys.stderr, flush=True)
        path = self.job_dir / proto.FALLBACK_FILE
        with contextlib.suppress(OSError):
            if not path.exists():  # the first agent's reason (after it, the others may only see its store gone)
                write_text_atomic(path, f"{name}: {why}\n")
        return None


def _env_time(name: str) -> float | None:
    """A time the batch script exported (seconds since the epoch), if it reads as one."""
    try:
        return float(os.environ[name])
    except (KeyError, ValueError):
        return None
