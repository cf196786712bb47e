"""The task process: ``python -m orchestrator.runtime.launch --job-dir DIR`` (what srun and ``orch run`` start).

:mod:`orchestrator.task.launch` does everything torch-free (job.json, trust, derivation, exports,
outcome records, the preemption flag, ``--master-port`` for the batch script); this module hands it
torch's side (:class:`TorchRuntime`), each piece imported only when the task gets that far:
``--master-port`` never imports torch. The same object is the in-process restarts' runtime
(:class:`orchestrator.restarts.worker.WorkerRuntime`): the restarts package never imports this layer.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.task import launch, lines

if TYPE_CHECKING:
    import datetime

    from orchestrator.env.devices import DeviceChoice
    from orchestrator.env.distenv import DistEnv
    from orchestrator.restarts.heartbeat import Heartbeat
    from orchestrator.restarts.store import AgentStore
    from orchestrator.spec.runconfig import RunConfig
    from orchestrator.task.preempt import PreemptFlag


class TorchRuntime:
    """:class:`orchestrator.task.launch.TaskRuntime` with torch: the shared entrypoint and the GPU binding; and
    :class:`orchestrator.restarts.worker.WorkerRuntime`: what the in-process restarts' worker uses of it."""

    def import_torch(self) -> None:
        from orchestrator.runtime.imports import timed_import_torch

        timed_import_torch()

    def train(self, cfg: RunConfig, env: DistEnv, job_dir: Path, flag: PreemptFlag,
              environ: os._Environ[str]) -> int:
        from orchestrator.runtime import entry

        return entry.run(cfg, env, job_dir, flag, environ)

    # in-process restarts (orchestrator/restarts/): this task as its rank's agent
    def is_agent(self, cfg: RunConfig, *, preflight: bool, loopback: bool) -> bool:
        from orchestrator.restarts.protocol import is_agent

        return is_agent(cfg, preflight=preflight, loopback=loopback)

    def supervise(self, cfg: RunConfig, env: DistEnv, job_dir: Path, *, on_start: Callable[[int], None],
                  in_worker: Callable[[], None], script: Callable[[], int] | None = None) -> int:
        from orchestrator.env.masterport import agents_port
        from orchestrator.env.taskenv import is_loopback
        from orchestrator.restarts import agent, worker
        from orchestrator.restarts.protocol import agents_apart

        init = cfg.launcher.init_timeout
        # a script on several nodes (or whose MASTER_ADDR is not this machine's): the agents meet at their own port
        apart = agents_apart(cfg, loopback=is_loopback(env.master_addr))
        port = agents_port(env.master_port, cfg.launcher.port_range) if apart else None
        role = agent.supervise(cfg, env, job_dir, self.agent_store(env, timeout=init, port=port), on_start,
                               warm_up=lambda: worker.warm_up(cfg),
                               host_port=(lambda: worker.host_world_store(
                                   env.master_addr, world_size=env.world_size, timeout=init, runtime=self))
                               if env.rank == 0 else None)
        if isinstance(role, agent.Ends):
            return role.code
        in_worker()  # a worker the agent forked: its own handlers, then its body
        if script is not None:  # a script's warm restarts: the world's ranks are forked again from the agents
            return script()
        return worker.train_generations(cfg, env, job_dir, role.worker.flag, os.environ, role.worker, self)

    def agent_store(self, env: DistEnv, *, timeout: int, port: int | None = None) -> AgentStore:
        """The agents' store: at MASTER_PORT (rank 0 of a script on one machine: the script's store it hosts
        already), or at ``port``, the agents' own (a script on several nodes)."""
        from orchestrator.restarts.worker import agent_store
        from orchestrator.runtime.dist import init_error
        from orchestrator.runtime.rendezvous import hosted

        existing = hosted() if env.rank == 0 and port is None else None  # a script's rank 0 hosts its store already
        if existing is not None:
            return existing
        at = env.master_port if port is None else port
        try:
            store: AgentStore = agent_store(env.master_addr, at, rank=env.rank, world_size=env.world_size,
                                            timeout=timeout, runtime=self)
        except (OSError, RuntimeError) as exc:  # the port is taken, rank 0 unreachable
            raise init_error(exc, rank=env.rank, master_addr=env.master_addr, master_port=at,
                             timeout=timeout) from None
        return store

    # restarts.worker.WorkerRuntime: the shared entrypoint on a generation's store, its error texts, the rendezvous
    def train_on(self, store: Any, cfg: RunConfig, env: DistEnv, job_dir: Path, flag: PreemptFlag,
                 environ: Any, beat: Heartbeat) -> int:
        from orchestrator.runtime import entry

        return entry.run(cfg, env, job_dir, flag, environ, store=store, beat=beat)

    def describe_error(self, exc: BaseException) -> str:
        from orchestrator.runtime import trainer

        return trainer.describe(exc)

    def loopback_store(self, addr: str, port: int, *, rank: int, world_size: int,
                       timeout: datetime.timedelta) -> Any:
        from orchestrator.runtime.rendezvous import loopback_store

        return loopback_store(addr, port, rank=rank, world_size=world_size, timeout=timeout)

    def host_loopback_store(self, addr: str, port: int, *, world_size: int, timeout: datetime.timedelta) -> None:
        from orchestrator.runtime.rendezvous import host_script_store

        host_script_store(addr, port, world_size=world_size, timeout=timeout)

    def hosted_store(self) -> Any:
        from orchestrator.runtime.rendezvous import hosted

        return hosted()

    def bind_script_device(self, *, rank: int, local_rank: int, local_world_size: int, gpus_per_task: int,
                           visible: str | None) -> DeviceChoice:
        from orchestrator.runtime.bind import bind_script_device

        return bind_script_device(rank=rank, local_rank=local_rank, local_world_size=local_world_size,
                                  gpus_per_task=gpus_per_task, visible=visible)

    def host_script_store(self, addr: str, port: int, *, world_size: int, timeout: int) -> None:
        import datetime

        from orchestrator.runtime.dist import init_error
        from orchestrator.runtime.rendezvous import host_script_store

        try:
            host_script_store(addr, port, world_size=world_size, timeout=datetime.timedelta(seconds=timeout))
        except OSError as exc:  # the port is taken: said as init_process_group's failure would be
            raise init_error(exc, rank=0, master_addr=addr, master_port=port, timeout=timeout) from None

    def watch_world(self, on_join: Callable[[int, int, str, bool | None], None], *, master_addr: str,
                    master_port: int) -> None:
        from orchestrator.runtime.worldhook import watch_world

        watch_world(on_join, master_addr=master_addr, master_port=master_port)

    def watch_spawned_world(self, on_join: Callable[[int, int, str, bool | None], None], *, master_addr: str,
                            master_port: int) -> None:
        from orchestrator.runtime.worldhook import watch_spawned_world

        watch_spawned_world(on_join, master_addr=master_addr, master_port=master_port)

    def bound_timeout(self, *, init_timeout: int, collective_timeout: int,
                      on_applied: Callable[[int, bool], None]) -> None:
        from orchestrator.runtime.pgtimeout import Bound, bound_timeout

        bound_timeout(Bound(init_s=init_timeout, collective_s=collective_timeout), on_applied)

    def describe_failure(self, exc: BaseException, timeout: int) -> tuple[str, str] | None:
        from orchestrator.runtime.dist import describe_failure

        return describe_failure(exc, timeout)

    def applied_timeout(self, text: str) -> int | None:
        from orchestrator.runtime.dist import applied_timeout

        return applied_timeout(text)


def main(argv: Sequence[str] | None = None) -> int:
    return launch.main(argv, TorchRuntime())


def run_task() -> None:
    """The task process, started (``python -m``) or forked (:mod:`orchestrator.runtime.forkserver`); never returns."""
    lines.start()  # each line one write, still live (not python -u), here and in the processes it spawns
    launch.entrypoint(TorchRuntime())


if __name__ == "__main__":
    run_task()
