"""The world check, a script task's side: watch which world this rank joins, say so, and (strict) fail.

Before a script of several ranks runs, :func:`watch` has torch's side wrap ``init_process_group``
(``runtime/worldhook.py``); each successful call lands in this rank's outcome record (``world``, through
:data:`~orchestrator.task.outcome.RECORDER`), and the verdict over every rank's record is
``records/restarts/world.py``'s (``orch run``'s last lines, ``orch status``). Here, one rank's own view:

- a world of another size than the job's: rank 0 prints one warning line at once (``orch: warning: ...``);
  with ``launcher.world_check: strict`` (``--strict-world``) the rank fails right there;
- no ``init_process_group`` after ``launcher.init_timeout`` seconds: rank 0 says so once, while it runs;
- at the end, strict: a rank that never joined the job's world fails (exit 2, the reason in its record).

A per-node script's ranks are the processes it starts (``torch.multiprocessing.spawn``): each of them watches
its own world (:class:`SpawnedCheck`, handed to every process the script spawns): a world of another size
than the job's ranks (nodes x processes per node; its node flags without orch's placeholders, say) gets the
same warning from that world's rank 0, and fails the process under ``strict``.

``launcher.world_check: independent`` (``--independent-ranks``) and jobs of one rank are not watched. No torch here.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from orchestrator.env.distenv import DistEnv
from orchestrator.errors import ConfigError
from orchestrator.records.restarts.rankoutcome import WorldJoin
from orchestrator.records.restarts.world import NEVER_FORMED_HINT, NEVER_INITIALISED_HINT, rank_problem
from orchestrator.spec.runconfig import RunConfig
from orchestrator.task.lines import fresh_line
from orchestrator.task.outcome import RECORDER

Settle = Callable[[int], int]  # the script's exit code -> the task's (strict: raises instead)


OnJoin = Callable[[int, int, str, "bool | None"], None]
PER_NODE_HINT = ("a per-node script's processes must form one world of every node's processes: give its node "
                 "flags orch's placeholders (-- ... {nnodes} {nproc_per_node} {node_rank}, see `orch doctor`)")


class Watcher(Protocol):
    def watch_world(self, on_join: OnJoin, *, master_addr: str, master_port: int) -> None: ...

    def watch_spawned_world(self, on_join: OnJoin, *, master_addr: str, master_port: int) -> None: ...


def watched(cfg: RunConfig, env: DistEnv) -> bool:
    """A script of several ranks, unless declared independent; not a per-node script (its ranks are the
    processes it spawns: :func:`spawned_ranks`)."""
    return (cfg.script is not None and env.world_size > 1 and cfg.launcher.world_check != "independent"
            and cfg.script.launch.style != "per-node")


def spawned_ranks(cfg: RunConfig, env: DistEnv) -> int:
    """A per-node script's world, watched in the processes it spawns: every node's processes (0: not watched,
    another style, one rank, or declared independent)."""
    if cfg.script is None or cfg.script.launch.style != "per-node" or cfg.launcher.world_check == "independent":
        return 0
    ranks = env.world_size * cfg.script.launch.procs_per_task
    return ranks if ranks > 1 else 0


def watch(cfg: RunConfig, env: DistEnv, runtime: Watcher) -> Settle:
    """Watch this rank's world (when the job asks for it); the returned function settles the script's end."""
    expected = spawned_ranks(cfg, env)
    if expected:
        runtime.watch_spawned_world(SpawnedCheck(expected, cfg.launcher.world_check == "strict"),
                                    master_addr=env.master_addr, master_port=env.master_port)
        return lambda code: code
    if not watched(cfg, env):
        return lambda code: code
    strict = cfg.launcher.world_check == "strict"
    state = Check(env=env, strict=strict)
    RECORDER.joined(WorldJoin())  # watched, nothing joined yet
    if env.rank == 0:
        state.timer = threading.Timer(cfg.launcher.init_timeout, state.late, args=(cfg.launcher.init_timeout,))
        state.timer.daemon = True
        state.timer.start()
    runtime.watch_world(state.on_join, master_addr=env.master_addr, master_port=env.master_port)
    return state.settle


class Check:
    """One rank's watch: the world it joined last, and what it says about it."""

    def __init__(self, *, env: DistEnv, strict: bool) -> None:
        self.env, self.strict = env, strict
        self.world = WorldJoin()
        self.timer: threading.Timer | None = None

    def on_join(self, size: int, rank: int, backend: str, at_orch: bool | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.world = WorldJoin(size=max(size, 1), rank=max(rank, 0), backend=backend[:40], orch_rendezvous=at_orch)
        RECORDER.joined(self.world)
        problem = rank_problem(self.world, self.env.world_size)
        if problem is None:
            return
        if self.strict:
            raise ConfigError(problem, hint=NEVER_FORMED_HINT)
        if self.env.rank == 0:
            _say(f"orch: warning: rank 0: {problem}; the job goes on (--strict-world stops it)")

    def late(self, seconds: int) -> None:
        """Rank 0, ``launcher.init_timeout`` seconds into the script without init_process_group."""
        if self.world.size is None:
            _say(f"orch: warning: rank 0 has not called init_process_group {seconds} s into the script "
                 f"(launcher.init_timeout): unless it does, the {self.env.world_size} ranks train as independent "
                 "copies")

    def settle(self, code: int) -> int:
        if self.timer is not None:
            self.timer.cancel()
        problem = rank_problem(self.world, self.env.world_size)
        if code == 0 and self.strict and problem is not None:
            hint = NEVER_INITIALISED_HINT if self.world.size is None else NEVER_FORMED_HINT
            raise ConfigError(problem, hint=hint)
        return code


@dataclass(frozen=True)
class SpawnedCheck:
    """A per-node script's spawned process: the world it joined against the job's ``expected`` ranks
    (picklable: handed to each process ``torch.multiprocessing`` starts). Its world's rank 0 warns;
    ``strict`` fails the process at the join."""

    expected: int
    strict: bool

    def __call__(self, size: int, rank: int, backend: str, at_orch: bool | None) -> None:
        world = WorldJoin(size=max(size, 1), rank=max(rank, 0), backend=backend[:40], orch_rendezvous=at_orch)
        problem = rank_problem(world, self.expected)
        if problem is None:
            return
        problem = problem.replace("this rank", f"the spawned rank {world.rank}", 1)
        if self.strict:
            raise ConfigError(problem, hint=PER_NODE_HINT)
        if world.rank == 0:
            _say(f"orch: warning: {problem}; the job goes on (--strict-world stops it)\nHINT: {PER_NODE_HINT}")


def _say(line: str) -> None:
    fresh_line()  # not glued to a line the script has not ended yet
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
