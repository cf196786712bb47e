"""The processes of ``orch run`` and of a task.

Real multi-process gloo runs of tests/jobs/hang.py through the installed CLI: the rendezvous
listens on loopback only, a rank's own subprocesses end with it, SIGTERM makes orch run
exit 143, the report blames the rank that stopped progressing and the timeout that applied,
and every rank leaves its Python stacks in its log.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from support import ORCH, TEST_CLUSTER, TESTS, clean_environ

from orchestrator.records.jobcreate import create_job_dir, write_config
from orchestrator.spec.cluster import Launcher
from orchestrator.spec.runconfig import RunConfig
from orchestrator.task.outcome import read_outcomes
from orchestrator.task.reaper import descendants

HANG_JOB = str(TESTS / "jobs" / "hang.py")
LOCAL_PROBE = "0100007F"  # 127.0.0.1 as /proc/net/tcp writes it


def env() -> dict[str, str]:
    return clean_environ(PYTHONPATH=os.environ.get("PYTHONPATH", ""))


def cluster(tmp_path: Path, **launcher: object) -> Path:
    data = {**TEST_CLUSTER, "env": {}, "launcher": {**TEST_CLUSTER["launcher"], "job_root": str(tmp_path / "jobs"),
                                                    **launcher}}
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def run(tmp_path: Path, *args: str, launcher: dict[str, object] | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, "run", HANG_JOB, "--cluster", str(cluster(tmp_path, **(launcher or {}))), *args],
                          capture_output=True, text=True, env=env(), cwd=tmp_path, timeout=timeout)


def job_dir(tmp_path: Path) -> Path:
    (folder,) = (tmp_path / "jobs").iterdir()
    return folder


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


# --- loopback rendezvous ----------------------------------------------------------------------------

def test_the_local_rendezvous_listens_on_loopback_only(tmp_path: Path) -> None:
    proc = run(tmp_path, "--nproc", "2", "probe=true")
    assert proc.returncode == 0, proc.stderr
    probe = json.loads((job_dir(tmp_path) / "listen.json").read_text())
    port = f"{probe['master_port']:04X}"
    mine = [addr for addr in probe["listening"] if addr.endswith(":" + port)]
    assert mine, probe
    assert all(addr.split(":")[0] == LOCAL_PROBE for addr in mine), mine


@pytest.mark.parametrize(("addr", "loopback"), [("127.0.0.1", True), ("127.1.2.3", True), ("::1", True),
                                                ("[::1]", True), ("localhost", True), ("10.0.0.1", False),
                                                ("node1", False), ("0.0.0.0", False), ("", False)])
def test_loopback_addresses(addr: str, loopback: bool) -> None:
    from orchestrator.runtime.rendezvous import is_loopback

    assert is_loopback(addr) == loopback


# --- process groups, and SIGTERM ----------------------------------------------------------------------

def test_a_dying_ranks_own_processes_end_with_it(tmp_path: Path) -> None:
    proc = run(tmp_path, "--nproc", "2", "child=true", "fault=raise", "fault_step=2")
    assert proc.returncode == 1, proc.stderr
    pids = [int(p.read_text()) for p in job_dir(tmp_path).glob("child-rank*.pid")]
    assert len(pids) == 2
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in pids)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_an_interrupted_orch_run_ends_the_ranks_children_and_exits_128_plus_signal(
        signum: int, code: int, tmp_path: Path) -> None:
    runner = subprocess.Popen([ORCH, "run", HANG_JOB, "--cluster", str(cluster(tmp_path)), "--nproc", "2",
                               "child=true", "step_sleep=0.5", "epochs=50"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(), cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list(tmp_path.glob("jobs/*/child-rank*.pid"))) < 2:
            time.sleep(0.2)
        time.sleep(1.0)
        runner.send_signal(signum)
        _, err = runner.communicate(timeout=120)
    finally:
        runner.kill()
    assert runner.returncode == code, err
    pids = [int(p.read_text()) for p in job_dir(tmp_path).glob("child-rank*.pid")]
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pids and not any(alive(pid) for pid in pids)


def test_the_task_entry_ends_its_children_itself(tmp_path: Path) -> None:
    """As under srun (no orch run around it): the launcher signals what it started before it exits."""
    folder = create_job_dir(tmp_path / "jobs" / "hang-task")  # a job folder as orch run makes it, no rank run yet
    write_config(folder, RunConfig(mode="local", job_name="hang", job_file=HANG_JOB, nodes=1, gpus_per_node=0,
                                   tasks_per_node=1, cpus_per_task=1, job_dir=str(folder), launcher=Launcher(),
                                   params={"epochs": 1, "child": True, "fault": "raise", "fault_rank": 0,
                                           "fault_step": 1}, created="2026-12-01T00:00:00+00:00"))
    task_env = {**env(), "RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1",
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(29000 + os.getpid() % 400)}
    task = subprocess.run([sys.executable, "-m", "orchestrator.runtime.launch", "--job-dir", str(folder)],
                          capture_output=True, text=True, env=task_env, timeout=300)
    assert task.returncode == 1, task.stderr
    pid = int((folder / "child-rank0.pid").read_text())
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid)


@pytest.mark.parametrize(("parents", "expected"), [
    ({}, []),
    ({2: 1, 3: 2, 4: 1, 5: 9}, [2, 4, 3]),
    ({2: 1, 1: 2}, [2]),  # a cycle (a pid reused while reading /proc) ends
    ({10: 1, 11: 10, 12: 11, 13: 12}, [10, 11, 12, 13]),
])
def test_descendants(parents: dict[int, int], expected: list[int]) -> None:
    assert descendants(1, parents) == expected


# --- blame, and evidence ----------------------------------------------------------------------------

@pytest.mark.parametrize(("fault", "stuck", "waiting"), [("spin", 1, 0), ("stop", 0, 1)])
def test_the_rank_that_stopped_progressing_is_blamed_and_leaves_its_stacks(
        fault: str, stuck: int, waiting: int, tmp_path: Path) -> None:
    proc = run(tmp_path, "--nproc", "2", f"fault={fault}", f"fault_rank={stuck}", "fault_step=3", "epochs=3",
               launcher={"collective_timeout": 6})
    assert proc.returncode != 0
    assert f"rank {stuck} stopped making progress" in proc.stderr, proc.stderr
    assert f"rank {waiting} waited for it" in proc.stderr and "timed out after 6 s" in proc.stderr, proc.stderr
    logs = job_dir(tmp_path) / "logs"
    stuck_log = (logs / f"local-rank{stuck}.out").read_text()
    waiting_log = (logs / f"local-rank{waiting}.out").read_text()
    if fault == "spin":  # a SIGSTOPped rank is killed after the grace period: it cannot write anything
        assert "spin_forever" in stuck_log, stuck_log[-2000:]
    assert "Thread 0x" in waiting_log or "Current thread" in waiting_log, waiting_log[-2000:]
    # each rank's own record: the stuck one was stopped while running (after its last step), the other waited
    records, notes = read_outcomes(job_dir(tmp_path))
    by_rank = {r.rank: r for r in records}
    assert notes == [] and sorted(by_rank) == [0, 1]
    assert by_rank[stuck].kind == "signalled" and by_rank[stuck].signal == "SIGTERM", by_rank[stuck]
    assert by_rank[stuck].stopped_by == "orch run" and by_rank[stuck].last_step is not None
    assert by_rank[waiting].kind == "waited" and by_rank[waiting].timeout_s == 6
    assert by_rank[waiting].timeout_setting == "launcher.collective_timeout"


def test_a_hang_in_build_names_the_start_up_timeout(tmp_path: Path) -> None:
    proc = run(tmp_path, "--nproc", "2", "fault=build_hang", "fault_rank=1",
               launcher={"init_timeout": 12, "collective_timeout": 5})
    assert proc.returncode != 0
    assert "rank 1 stopped making progress" in proc.stderr, proc.stderr
    assert "after 12 s" in proc.stderr and "after 5 s" not in proc.stderr, proc.stderr
    assert "launcher.init_timeout" in proc.stderr, proc.stderr
    records, _ = read_outcomes(job_dir(tmp_path))
    waited = [r for r in records if r.kind == "waited"]
    assert waited and all(r.timeout_s == 12 and r.timeout_setting == "launcher.init_timeout" for r in waited)
    assert {r.rank: r for r in records}[1].last_step is None  # stuck in build: no step finished


def test_flight_recorder_variables() -> None:
    from orchestrator.task.hang import flight_recorder_env

    got = flight_recorder_env(Path("/j"), {}, "2.7.1+cu126")  # torch before 2.8: the TORCH_NCCL_* names
    assert got["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "2000" and got["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"
    assert got["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] == "/j/logs/nccl_trace_rank_"
    assert "TORCH_NCCL_DUMP_ON_TIMEOUT" not in flight_recorder_env(Path("/j"), {"TORCH_NCCL_DUMP_ON_TIMEOUT": "0"},
                                                                   "2.7.1")
