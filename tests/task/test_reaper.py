"""The rendezvous store of one machine listens on loopback only,
also for a user's script, and every process a local run started ends with it.

Real ``orch run`` of torchrun-style scripts (tests/scripts/hold_store.py, tests/scripts/leaky.py) in
2 or 3 gloo ranks; what is left is read from /proc (``/proc/net/tcp{,6}``, ``/proc/PID/stat``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support import LOOPBACK4, LOOPBACK6, ORCH, ROOT, clean_environ, listeners

from orchestrator.env.distenv import DistEnv
from orchestrator.env.taskenv import is_loopback, script_env
from orchestrator.task import reaper

pytestmark = pytest.mark.slow

SCRIPTS = ROOT / "tests" / "scripts"
TIMEOUT = 240


def _env() -> dict[str, str]:
    return clean_environ(PYTHONPATH=str(ROOT))


def _start(tmp_path: Path, script: str, *args: str, nproc: int = 2) -> subprocess.Popen[bytes]:
    return subprocess.Popen([ORCH, "run", str(SCRIPTS / script), "--nproc", str(nproc), "--cpu",
                             "--job-root", str(tmp_path / "jobs"), "--", *args],
                            cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(paths: list[Path], proc: subprocess.Popen[bytes], timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        if proc.poll() is not None:
            _, err = proc.communicate()
            raise AssertionError(f"orch run ended early ({proc.returncode}): {err.decode(errors='replace')}")
        assert time.monotonic() < deadline, f"timed out waiting for {paths}"
        time.sleep(0.05)


# --- the rendezvous store of one machine: loopback only -----------------------------------------------

@pytest.mark.parametrize(("how", "nproc"), [("env", 2), ("tcp", 3)])
def test_a_scripts_store_listens_on_loopback_only(how: str, nproc: int, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    proc = _start(tmp_path, "hold_store.py", str(out), how, nproc=nproc)
    try:
        _wait_for([out / "ready"], proc)
        port = int((out / "ready").read_text())
        seen = listeners(port)
        (out / "go").write_text("")
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 0, err.decode(errors="replace")
    assert seen, f"nothing listens on {port}"
    assert set(seen) <= {LOOPBACK4, LOOPBACK6}, seen  # never 0.0.0.0 or ::


@pytest.mark.parametrize(("addr", "agent"), [("127.0.0.1", "True"), ("127.3.2.1", "True"), ("::1", "True"),
                                             ("localhost", "True"), ("10.1.2.3", "False"), ("gpu001", "False"),
                                             ("0.0.0.0", "False"), ("fe80::1", "False")])
def test_scripts_use_orchs_store_only_on_one_machine(addr: str, agent: str) -> None:
    env = DistEnv(rank=1, local_rank=1, world_size=2, local_world_size=2, node_rank=0, num_nodes=1,
                  master_addr=addr, master_port=29511)
    got = script_env(env, restart_count=0, max_restarts=0, run_id="x", cpus_per_task=1, environ={})
    assert got["TORCHELASTIC_USE_AGENT_STORE"] == agent
    assert is_loopback(addr) == (agent == "True")


# --- every process of the run ends with it ---------------------------------------------------------------

def _pids(out: Path) -> dict[str, int]:
    return {p.name[:-4]: int(p.read_text()) for p in out.glob("*.pid")}


def _left(pids: dict[str, int], timeout: float = 30) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    left = pids
    while left and time.monotonic() < deadline:
        left = {name: pid for name, pid in left.items() if reaper.alive(pid)}
        if left:
            time.sleep(0.1)
    return left


def _of_run(tmp_path: Path) -> list[int]:
    """Processes whose command line names this test's folder (every process the run started does)."""
    mine = os.fsencode(str(tmp_path))
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if mine in (entry / "cmdline").read_bytes() and reaper.alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize(("mode", "ranks", "code"), [
    ("exit", ["0", "1"], 0),  # the job completes: helpers that ignore SIGTERM and daemons are left behind
    ("fail", ["1"], 1),  # a rank fails
    ("kill", ["0"], 137),  # a rank dies of SIGKILL: it cannot clean up itself
])
def test_no_process_outlives_orch_run(mode: str, ranks: list[str], code: int, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    proc = _start(tmp_path, "leaky.py", str(out), mode, *ranks)
    try:
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == code, err.decode(errors="replace")
    pids = _pids(out)
    assert {f"{kind}-rank{r}" for kind in ("helper", "daemon") for r in ranks} <= set(pids), pids
    assert _left(pids) == {}
    assert _of_run(tmp_path) == []


def test_a_stopped_rank_and_every_helper_end_when_orch_run_is_killed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    proc = _start(tmp_path, "leaky.py", str(out), "stop", "1", "2", nproc=3)
    try:
        _wait_for([out / "ready-rank1", out / "ready-rank2", out / "rank0.pid"], proc)
        stopped = int((out / "rank1.pid").read_text())
        deadline = time.monotonic() + 30
        while "T" not in Path(f"/proc/{stopped}/stat").read_text().rsplit(")", 1)[1][:3]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    pids = _pids(out)
    assert {"rank0", "rank1", "rank2", "helper-rank1", "daemon-rank2"} <= set(pids), pids
    assert _left(pids) == {}
    assert _of_run(tmp_path) == []


def test_stop_kills_what_ignores_sigterm_and_wakes_what_is_stopped(tmp_path: Path) -> None:
    code = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('ready', flush=True); time.sleep(60)")
    stubborn = subprocess.Popen(["python3", "-c", code], stdout=subprocess.PIPE)
    assert stubborn.stdout is not None and stubborn.stdout.readline() == b"ready\n"
    polite = subprocess.Popen(["sleep", "60"])
    os.kill(polite.pid, signal.SIGSTOP)
    killed = reaper.stop([stubborn.pid, polite.pid], grace=1.0)
    assert stubborn.wait(timeout=10) == -signal.SIGKILL and killed == [stubborn.pid]
    assert polite.wait(timeout=10) == -signal.SIGTERM
