"""In-process restarts of orch's entrypoint, torch's side: the agents' store and a worker's generations.

An agent (``restarts/agent.py``) hosts (rank 0) or joins the step's store at MASTER_PORT
(:func:`agent_store`) and forks its rank's worker, which trains through :func:`train_generations`: each
generation forms its process group on the store under its own prefix. When a collective fails because a
peer went away (gloo raises on the survivors as soon as the peer's sockets close; a stopped peer is
killed by its agent first, since gloo cannot abort a collective in flight), the worker waits for the
failed rank's agent to decide: on a restart it leaves the failed group (destroyed as training unwinds),
starts the next generation in the same process and resumes from the newest checkpoint, as a restarted
rank would; otherwise the error ends it as before. NCCL: the same path, after the failed collective
returns (``TORCH_NCCL_ASYNC_ERROR_HANDLING`` makes the watchdog abort the communicator); the failed world is
aborted (``dist.abort_world``) rather than destroyed (untested on GPUs).

The only module of ``orchestrator/restarts/`` that imports torch. What it needs of the runtime (the shared
entrypoint, its error texts, the loopback rendezvous) comes in as a :class:`WorkerRuntime`, handed in by
``runtime/launch.py`` (the layer above): this package never imports ``orchestrator.runtime``.
"""

from __future__ import annotations

import datetime
import os
import sys
import time
from pathlib import Path
from typing import Any, Protocol

from torch.distributed import PrefixStore, TCPStore  # type: ignore[attr-defined]  # (not re-exported in the stubs)

from orchestrator.env.distenv import DistEnv
from orchestrator.env.taskenv import is_loopback
from orchestrator.records.restarts.rankoutcome import PEER_FAILURE_EXIT
from orchestrator.restarts import protocol as proto
from orchestrator.restarts.generation import Worker
from orchestrator.restarts.heartbeat import Heartbeat
from orchestrator.spec.runconfig import RunConfig
from orchestrator.task.outcome import RECORDER
from orchestrator.task.preempt import PreemptFlag


class WorkerRuntime(Protocol):
    """What a worker and the agents' store use of the runtime (``runtime/launch.py``'s ``TorchRuntime``)."""

    def train_on(self, store: Any, cfg: RunConfig, env: DistEnv, job_dir: Path, flag: PreemptFlag,
                 environ: Any, beat: Heartbeat) -> int:
        """One generation through the shared entrypoint (``runtime/entry.py``), its process group on ``store``,
        its training steps ticking ``beat``."""

    def describe_error(self, exc: BaseException) -> str:
        """The one-line description of a training error (``runtime/trainer.py``)."""

    def describe_failure(self, exc: BaseException, timeout: int) -> tuple[str, str] | None:
        """(message, hint) when ``exc`` is a collective that failed or timed out (``runtime/dist.py``)."""

    def loopback_store(self, addr: str, port: int, *, rank: int, world_size: int,
                       timeout: datetime.timedelta) -> Any:
        """A TCPStore listening on a loopback address only (``runtime/rendezvous.py``)."""

    def host_loopback_store(self, addr: str, port: int, *, world_size: int, timeout: datetime.timedelta) -> None:
        """Host a store on loopback for the task's life (``runtime/rendezvous.py``'s ``host_script_store``)."""

    def hosted_store(self) -> Any:
        """The store this task hosted last, or None (``runtime/rendezvous.py``'s ``hosted``)."""


def agent_store(addr: str, port: int, *, rank: int, world_size: int, timeout: int, runtime: WorkerRuntime) -> Any:
    """The step's store: rank 0's agent hosts it (loopback only on one machine), the others connect."""
    delta = datetime.timedelta(seconds=timeout)
    if is_loopback(addr):
        return runtime.loopback_store(addr, port, rank=0 if rank == 0 else 1, world_size=world_size, timeout=delta)
    host = addr.strip().strip("[]")
    if rank == 0:
        return TCPStore(host, port, world_size, True, timeout=delta, wait_for_workers=False)
    return TCPStore(host, port, world_size, False, timeout=delta)


def warm_up(cfg: RunConfig) -> None:
    """What a worker imports after torch, imported once in the agent: a replaced worker finds it loaded
    (orch's entrypoint: torch._dynamo and the job file; a script: its top-level imports of known packages)."""
    from orchestrator.spec.snapshot import relocate

    if cfg.script is not None:
        if cfg.script.kind == "script":
            warm_script(Path(relocate(cfg.script.target, cfg.snapshot)))
        return
    import torch._dynamo  # noqa: F401  # DDP's

    from orchestrator.spec.job import load_job_file

    load_job_file(Path(relocate(cfg.job_file, cfg.snapshot)))


def warm_script(path: Path) -> list[str]:
    """Import the script's top-level imports of :data:`~orchestrator.restarts.protocol.WARM_PACKAGES`
    that are installed (never the script itself, never CUDA); the modules imported."""
    import importlib
    import importlib.util

    try:
        source = path.read_bytes()[:2_000_000].decode("utf-8", "replace")
    except OSError:
        return []
    done = []
    for name in proto.warm_imports(source):
        try:
            if importlib.util.find_spec(name.split(".")[0]) is None:
                continue
            importlib.import_module(name)
        except Exception:  # the worker imports it again and says what is wrong
            continue
        done.append(name)
    return done


_WORLDS: list[Any] = []  # the stores of a script's later worlds on several nodes, kept for the agent's life


def host_world_store(addr: str, *, world_size: int, timeout: int, runtime: WorkerRuntime) -> int:
    """Rank 0 of a script's warm restarts: host the next world's store at a free port (the store keeps the
    socket that took it: bound once, not probed and bound again): on loopback when MASTER_ADDR is, else on every
    interface, as torch's own rendezvous store listens (the other nodes' ranks reach it at MASTER_ADDR)."""
    delta = datetime.timedelta(seconds=timeout)
    if is_loopback(addr):
        runtime.host_loopback_store(addr, 0, world_size=world_size, timeout=delta)
        store = runtime.hosted_store()
    else:
        store = TCPStore(addr.strip().strip("[]"), 0, world_size, True, timeout=delta, wait_for_workers=False)
        _WORLDS.append(store)
    assert store is not None
    return int(store.port)


def train_generations(cfg: RunConfig, env: DistEnv, job_dir: Path, flag: PreemptFlag, environ: Any,
                      worker: Worker, runtime: WorkerRuntime) -> int:
    """Train as ``worker``'s rank, generation after generation, until one ends without a peer's failure."""
    store = agent_store(worker.store_addr, worker.store_port, rank=1, world_size=env.world_size,
                        timeout=cfg.launcher.init_timeout,
                        runtime=runtime)  # this process's own connection (never the agent's)
    while True:
        store.set(proto.at(worker.rank), str(worker.generation))
        try:
            return runtime.train_on(PrefixStore(proto.prefix(worker.generation), store), cfg, env, job_dir, flag,
                                    environ, worker.beat)
        except Exception as exc:
            peer = runtime.describe_failure(exc, cfg.launcher.collective_timeout)
            if peer is None:
                raise
            # this attempt's record, as a rank that lost its peer ends it, before the failed rank's agent decides
            RECORDER.finish("waited", PEER_FAILURE_EXIT, reason=f"{peer[0]} ({runtime.describe_error(exc)})",
                            how="timeout" if "timed out" in peer[0] else "lost")
            store.set(proto.lost(worker.generation, worker.rank), "1")
            store.set(proto.reported(worker.generation, worker.rank), "lost")  # what the deciding agent waits for
            store.add(proto.gave_up(worker.generation), 1)  # a peer's agent whose worker stopped stepping: it hangs
            worker.beat.rest()  # waiting for the decision is no training step: its agent must not call it hung
            restart, why = proto.parse_decision(_decision(store, worker.generation, worker.wait_s))
            if not restart:
                print(f"orch: rank {worker.rank}: no in-process restart ({why})", file=sys.stderr, flush=True)
                raise
            print(f"orch: rank {worker.rank}: a peer failed ({type(exc).__name__}); generation "
                  f"{worker.generation + 1} in this process (pid {os.getpid()}), from the newest checkpoint",
                  file=sys.stderr, flush=True)
            worker.restart(worker.generation + 1, announce=lambda g: store.set(proto.at(worker.rank), str(g)))
        release()  # after the except clause: the error's traceback no longer holds the failed generation's frames


def release() -> None:
    """Free the failed generation's model, optimizer, loaders (and their workers) before the next one is built:
    a GPU holds one copy at a time."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        torch.cuda.empty_cache()


def _decision(store: Any, generation: int, wait_s: float) -> bytes | None:
    """The failed rank's decision on ``generation`` (None: none came within ``wait_s``, or the store is gone)."""
    deadline = time.monotonic() + wait_s
    key = proto.decision(generation)
    try:
        while time.monotonic() < deadline:
            if store.check([key]):
                return bytes(store.get(key))
            time.sleep(proto.POLL_S)
    except (OSError, RuntimeError):
        return None
    return None
