"""A script's warm restarts on several nodes (restarts/agent.py, worker.py), with real processes: the two tasks of a
2-node Slurm step of tests/scripts/ddp_train.py (gloo, CPU), started as srun starts them (Slurm's variables, the
MASTER_ADDR:MASTER_PORT the batch script exports), through the real task launcher. The agents meet at their own
port (env/masterport.py's agents_port), rank 0's agent hosts the agents' store there, and the next world's
MASTER_ADDR:MASTER_PORT is agreed through it. Rank 1's worker dies of SIGKILL after its first step: the world is
forked again from the agents in the same processes, and trains as an uninterrupted run (tests/local/sharedlocal.py's
``orch run`` of the script on 2 ranks, made once per session: the same world size, steps and learning rate). MASTER_ADDR
is this machine's own non-loopback address where it has one (a real cluster's path: the world's store listens on every
interface), else loopback (nodes of a test cluster that share one address)."""

from __future__ import annotations

import ipaddress
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from local import sharedlocal
from support import clean_environ

from orchestrator.env import taskenv
from orchestrator.records.jobcreate import create_job_dir, write_config
from orchestrator.records.restarts.attempts import read_attempts
from orchestrator.spec.cluster import Launcher
from orchestrator.spec.runconfig import RunConfig
from orchestrator.spec.script import ScriptTarget

DDP = sharedlocal.DDP
TIMEOUT = 120


def own_address() -> str:
    """This machine's address on its default route (no packet is sent), else loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("192.0.2.254", 9))
            addr = str(sock.getsockname()[0])
        except OSError:
            return "127.0.0.1"
    return "127.0.0.1" if ipaddress.ip_address(addr).is_loopback else addr


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("", 0))
        return int(sock.getsockname()[1])


def step(root: Path, name: str, addr: str, *args: str) -> tuple[Path, list[subprocess.CompletedProcess[str]]]:
    """Both tasks of one 2-node step of ddp_train.py (sharedlocal.DDP_STEPS) with ``args``: (the job folder, each
    task's run)."""
    folder = create_job_dir(root / name)
    out = folder / "out"
    script = ScriptTarget(kind="script", target=str(DDP), cwd=str(DDP.parent),
                          args=["--out", str(out), *sharedlocal.DDP_STEPS, *args])
    write_config(folder, RunConfig(mode="slurm", job_name="ddp_train", job_file=str(DDP), params={}, nodes=2,
                                   gpus_per_node=0, tasks_per_node=1, cpus_per_task=1, job_dir=str(folder),
                                   created="2026-11-29T00:00:00+00:00", script=script,
                                   launcher=Launcher(init_timeout=30, collective_timeout=5, max_restarts=1)))
    job_id = str(free_port())  # an id of its own per step: its MASTER_PORT is given, the agents' follows it
    envs = taskenv.simulate_slurm_task_envs(["node1", "node2"], 1, job_id, 0, addr, free_port())
    procs = [subprocess.Popen([sys.executable, "-m", "orchestrator.runtime.launch", "--job-dir", str(folder)],
                              env=clean_environ(**environ),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for environ in envs]
    runs = []
    for proc in procs:
        try:
            output, _ = proc.communicate(timeout=TIMEOUT)
        finally:
            proc.kill()
        runs.append(subprocess.CompletedProcess(proc.args, proc.returncode, output, ""))
    return folder, runs


def params(folder: Path) -> list[Any]:
    return [json.loads((folder / "out" / f"rank{r}.json").read_text()) for r in (0, 1)]


@pytest.mark.slow
def test_a_script_on_two_nodes_restarts_warm_and_trains_as_an_uninterrupted_run(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    addr = own_address()
    folder, runs = step(tmp_path, "killed", addr, "--kill-first-attempt", "1")
    detail = "\n".join(f"rank {r}: exit {run.returncode}\n{run.stdout[-3000:]}" for r, run in enumerate(runs))
    assert [run.returncode for run in runs] == [0, 0], detail  # one step: the tasks themselves restarted it
    [first] = read_attempts(folder)  # (the completed attempt: recorded by the batch script, none here)
    assert first["in_process"] is True and first["blamed_rank"] == 1 and first["exit_code"] == -9, (first, detail)
    assert "by_step" not in first and first["restarted"] is True, (first, detail)
    restarted = params(folder)
    assert [r["env"]["TORCHELASTIC_RESTART_COUNT"] for r in restarted] == ["1", "1"], restarted
    # the restarted world met at the store rank 0's agent hosted (agreed through the agents' store), as a client
    assert {r["env"]["MASTER_ADDR"] for r in restarted} == {addr}, restarted
    assert len({r["env"]["MASTER_PORT"] for r in restarted}) == 1 and \
        all(r["env"]["TORCHELASTIC_USE_AGENT_STORE"] == "True" for r in restarted), restarted
    assert "restarting in the step's processes" in "".join(run.stdout for run in runs), detail
    uninterrupted = sharedlocal.ddp_train(tmp_path_factory)
    assert uninterrupted["proc"].returncode == 0, uninterrupted["proc"].stderr.decode(errors="replace")[-3000:]
    assert [r["params"] for r in restarted] == [r["params"] for r in params(uninterrupted["folder"])]

