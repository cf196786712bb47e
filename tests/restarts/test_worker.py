"""The agents' store (restarts/worker.py): rank 0's agent hosts it on loopback only, the others and every
worker connect; one claim per generation wins; a survivor waits for the decision a bounded time."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support import listeners

from orchestrator.local.rankenv import free_port
from orchestrator.restarts import protocol as proto
from orchestrator.restarts.worker import _decision, agent_store
from orchestrator.runtime.launch import TorchRuntime

RUNTIME = TorchRuntime()  # what runtime/launch.py hands the worker: torch's loopback rendezvous and entrypoint


def test_rank_0_hosts_the_store_on_loopback_and_one_claim_wins() -> None:
    port = free_port()
    host = agent_store("localhost", port, rank=0, world_size=3, timeout=10, runtime=RUNTIME)
    assert listeners(port) == ["0100007F"]  # 127.0.0.1 only, never every interface
    clients = [agent_store("127.0.0.1", port, rank=r, world_size=3, timeout=10, runtime=RUNTIME) for r in (1, 2)]
    wins = [store.add(proto.claim(4), 1) == 1 for store in (host, *clients)]
    assert wins == [True, False, False]
    clients[1].set(proto.decision(4), proto.RESTART)
    assert _decision(clients[0], 4, wait_s=1.0) == b"restart"


def test_a_survivor_waits_for_the_decision_a_bounded_time() -> None:
    port = free_port()
    host = agent_store("127.0.0.1", port, rank=0, world_size=2, timeout=10, runtime=RUNTIME)
    client = agent_store("127.0.0.1", port, rank=1, world_size=2, timeout=10, runtime=RUNTIME)
    began = time.monotonic()
    assert _decision(client, 0, wait_s=0.3) is None
    assert 0.3 <= time.monotonic() - began < 3
    later = threading.Timer(0.2, lambda: host.set(proto.decision(1), proto.encode_stop("used up")))
    later.start()
    assert proto.parse_decision(_decision(client, 1, wait_s=5)) == (False, "used up")
    later.join()


def test_an_agent_imports_a_scripts_known_packages_that_are_installed(tmp_path: Path) -> None:
    from orchestrator.restarts.worker import warm_script

    script = tmp_path / "train.py"
    script.write_text("import numpy\nimport torch.nn\nimport transformers_not_installed_here\nimport mylib\n"
                      "raise SystemExit('never run')\n", encoding="utf-8")
    assert "numpy" in warm_script(script) and "torch.nn" in warm_script(script)
    assert warm_script(script) == ["numpy", "torch.nn"]  # never the script itself, nor unknown packages
    assert warm_script(tmp_path / "missing.py") == []


def test_a_failed_nccl_world_is_aborted_where_torch_can(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch.distributed as dist

    from orchestrator.runtime import dist as orch_dist

    called: list[str] = []
    monkeypatch.setattr(dist.distributed_c10d, "_abort_process_group", lambda: called.append("abort"))
    assert orch_dist.abort_world() and called == ["abort"]

    def broken() -> None:
        raise RuntimeError("NCCL communicator was aborted")

    monkeypatch.setattr(dist.distributed_c10d, "_abort_process_group", broken)
    assert not orch_dist.abort_world()  # the caller destroys the groups instead
    monkeypatch.delattr(dist.distributed_c10d, "_abort_process_group")
    assert not orch_dist.abort_world()


def test_a_generations_gloo_world_is_destroyed_after_a_failure() -> None:
    import torch.distributed as dist
    from torch.distributed import PrefixStore

    from orchestrator.env.devices import select_device
    from orchestrator.runtime.dist import process_group

    port = free_port()
    host = agent_store("127.0.0.1", port, rank=0, world_size=1, timeout=10, runtime=RUNTIME)
    choice = select_device(cuda_available=False, device_count=0, visible=None, rank=0, local_rank=0,
                           local_world_size=1)
    for generation in (0, 1):  # the same process, one world after the other, each under its own prefix
        with pytest.raises(RuntimeError, match="lost"), process_group(
                rank=0, world_size=1, local_rank=0, master_addr="127.0.0.1", master_port=port, choice=choice,
                timeout=10, collective_timeout=5, store=PrefixStore(proto.prefix(generation), host)):
            assert dist.is_initialized()
            raise RuntimeError("lost the connection to another rank")
        assert not dist.is_initialized()


def test_a_scripts_next_world_store_binds_its_port_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next world's store takes a free port by binding it and keeps that socket (no probe closed and bound
    again, which another process could take in between), on loopback only."""
    import socket

    from orchestrator.restarts.worker import host_world_store

    binds: list[Any] = []
    bind = socket.socket.bind

    def counted(self: socket.socket, address: Any) -> None:
        binds.append(address)
        bind(self, address)

    monkeypatch.setattr(socket.socket, "bind", counted)
    port = host_world_store("127.0.0.1", world_size=2, timeout=10, runtime=RUNTIME)
    assert len(binds) == 1 and port > 0, binds
    assert listeners(port) == ["0100007F"]
    client = agent_store("127.0.0.1", port, rank=1, world_size=2, timeout=10, runtime=RUNTIME)
    client.set("k", "v")


HOST_AGENT = """
import os, sys, time
from pathlib import Path
from orchestrator.env.distenv import DistEnv
from orchestrator.runtime.launch import TorchRuntime
from orchestrator.spec.cluster import Launcher
from orchestrator.restarts import agent
env = DistEnv(**ENV)
store = TorchRuntime().agent_store(env, timeout=60)
print("ready", flush=True)
sys.stdin.readline()  # the peer's agent is connected
cfg = type("Cfg", (), {"launcher": Launcher(max_restarts=1), "script": None})()
host = agent._Agent(cfg, env, Path(JOB_DIR), store, 0, lambda g: None)
if host.fork(0) is not None:  # the worker trains on (it inherited the store's sockets)
    time.sleep(120)
    os._exit(0)
print(host.pid, flush=True)
time.sleep(120)
"""


def test_the_store_hosts_death_is_seen_by_the_other_agents_at_once(tmp_path: Path) -> None:
    """kill -9 of rank 0's agent, which hosts the store and forked a worker (which inherited the store's
    sockets): its worker dies with it, so the other agents' store calls fail at once (they fall back to the
    step-level restart, store_lost) instead of waiting on a connection the orphaned worker holds open."""
    import os
    import signal
    import subprocess
    import sys
    import threading

    from orchestrator.env.distenv import DistEnv
    from orchestrator.runtime.launch import TorchRuntime
    from orchestrator.task.reaper import alive

    port = free_port()

    def env(rank: int) -> DistEnv:
        return DistEnv(rank=rank, local_rank=rank, world_size=2, local_world_size=2, node_rank=0, num_nodes=1,
                       master_addr="127.0.0.1", master_port=port)

    code = HOST_AGENT.replace("ENV", repr(vars(env(0)))).replace("JOB_DIR", repr(str(tmp_path)))
    host = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert host.stdin is not None and host.stdout is not None
    worker = 0
    try:
        assert host.stdout.readline().strip() == "ready"
        peer = TorchRuntime().agent_store(env(1), timeout=60)
        peer.set("k", "v")
        host.stdin.write("\n")
        host.stdin.flush()
        worker = int(host.stdout.readline())
        os.kill(host.pid, signal.SIGKILL)
        host.wait()
        failed: list[BaseException] = []

        def call() -> None:
            try:
                while True:
                    peer.check(["k"])
                    time.sleep(0.1)
            except (RuntimeError, OSError) as exc:
                failed.append(exc)

        caller = threading.Thread(target=call, daemon=True)  # (today's code: blocked for good)
        caller.start()
        caller.join(timeout=30)
        assert failed, "the other agent's store calls still wait on the dead host after 30 s"
        gone = time.monotonic() + 5  # its parent-death signal is at once; its reaping may lag on a loaded machine
        while alive(worker) and time.monotonic() < gone:
            time.sleep(0.05)
        assert not alive(worker), "the host's worker outlived it"
    finally:
        host.kill()
        host.wait()
        if worker and alive(worker):
            os.kill(worker, signal.SIGKILL)


def test_an_agent_falls_back_in_seconds_when_the_store_host_hangs(tmp_path: Path) -> None:
    """rank 0's agent (the store's host) is stopped (SIGSTOP): the other agent, whose worker failed, takes the
    store for lost within seconds and falls back to the step-level restart (store_lost), where torch's client
    calls would wait for good."""
    import os
    import signal
    import subprocess
    import sys
    import threading

    from orchestrator.env.distenv import DistEnv
    from orchestrator.restarts import agent
    from orchestrator.runtime.launch import TorchRuntime
    from orchestrator.spec.cluster import Launcher

    port = free_port()

    def env(rank: int) -> DistEnv:
        return DistEnv(rank=rank, local_rank=rank, world_size=2, local_world_size=2, node_rank=0, num_nodes=1,
                       master_addr="127.0.0.1", master_port=port)

    code = HOST_AGENT.replace("ENV", repr(vars(env(0)))).replace("JOB_DIR", repr(str(tmp_path)))
    host = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert host.stdout is not None
    try:
        assert host.stdout.readline().strip() == "ready"
        cfg = type("Cfg", (), {"launcher": Launcher(collective_timeout=5, max_restarts=1), "script": None})()
        peer = agent._Agent(cfg, env(1), tmp_path, TorchRuntime().agent_store(env(1), timeout=60), 0, lambda g: None)
        os.kill(host.pid, signal.SIGSTOP)
        began = time.monotonic()
        result: list[object] = []
        caller = threading.Thread(target=lambda: result.append(peer._after_failure(-9)), daemon=True)
        caller.start()
        caller.join(timeout=40)  # (today's code: blocked for good)
        assert result == [None] and time.monotonic() - began < 30, result
        assert (tmp_path / proto.FALLBACK_FILE).read_text().startswith("store_lost: ")
    finally:
        host.kill()
        host.wait()
