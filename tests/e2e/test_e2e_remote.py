"""Submission from a laptop over SSH, end to end on the local Slurm cluster.

A real sshd (tests/sshd.py) stands in front of the cluster, with ``SetEnv SLURM_CONF=...``; the
"laptop" is a folder outside the cluster's paths and a state folder of its own, reaching the cluster
only through the SSH cluster file. A BYO script is submitted held, edited and submitted again (the
edit is shipped to the same remote copy while the first job waits): each job's log shows the version
it was submitted with. ``orch status``, ``orch logs -f`` (with the connection killed once mid-stream),
``orch cancel`` and ``orch list`` work from the laptop.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from sshd import orch_wrapper, short_socket_dir, sshd_or_skip
from support import ORCH, clean_environ

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SCRIPT = """import time
print('version {version}', flush=True)
for i in range(20):
    print(f'tick {{i}}', flush=True)
    time.sleep(0.5)
"""


def test_submit_from_a_laptop_over_ssh(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    there_state = tmp_path / "state-there"
    with sshd_or_skip(tmp_path / "sshd", {"SLURM_CONF": str(slurm_cluster.conf), "SHLVL": "1"}) as server:
        wrapper = orch_wrapper(tmp_path / "orch-there", ORCH, {"ORCH_STATE_DIR": str(there_state)})
        sockets = short_socket_dir()

        def add_remote(data: dict[str, object]) -> None:
            data["remote"] = {"host": "orchtest", "ssh_config": str(server.ssh_config), "orch": str(wrapper),
                              "workdir": str(tmp_path / "work")}

        remote_yaml = slurm_cluster.derived_cluster_yaml(tmp_path / "laptop-cluster.yaml", add_remote)
        laptop = tmp_path / "laptop" / "proj"
        laptop.mkdir(parents=True)
        env = clean_environ(ORCH_SSH_DIR=str(sockets), ORCH_STATE_DIR=str(tmp_path / "state-here"))

        def orch(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
            return subprocess.run([ORCH, *args], capture_output=True, text=True, env=env, cwd=laptop,
                                  timeout=timeout, check=False)

        def submit(*extra: str) -> tuple[str, Path]:
            proc = orch("submit", "train.py", "--gpus", "1", "--time", "00:05:00", "--json",
                        "--cluster", str(remote_yaml), *extra)
            assert proc.returncode == 0, proc.stderr
            data = json.loads(proc.stdout)
            return str(data["job_id"]), Path(data["job_dir"])

        (laptop / "train.py").write_text(SCRIPT.format(version=1))
        first, first_dir = submit("--sbatch-arg", "hold")
        (laptop / "train.py").write_text(SCRIPT.format(version=2))  # edited right after the submit
        # the edit goes to the same remote copy while the first job waits
        second, second_dir = submit("--sbatch-arg", "hold")
        assert slurm_cluster.client("scontrol", "release", first).returncode == 0

        status = orch("status", first, "--json")  # no --cluster: the laptop's index knows the job
        assert status.returncode == 0, status.stderr
        assert "state" in json.loads(status.stdout)

        def kill_master() -> None:
            time.sleep(4)
            from orchestrator.remote.ssh import Connection
            from orchestrator.spec.clusterparse import parse_cluster

            spec = parse_cluster(remote_yaml.read_text()).remote
            assert spec is not None
            pid = Connection(spec, env).master_pid()
            if pid:
                os.kill(pid, 9)

        killer = threading.Thread(target=kill_master, daemon=True)
        killer.start()
        followed = orch("logs", first, "-f", timeout=180)
        killer.join()
        assert followed.returncode == 0, followed.stderr
        assert "dropped; reconnecting" in followed.stderr
        assert "version 1" in followed.stdout and "version 2" not in followed.stdout
        ticks = [line for line in followed.stdout.splitlines() if line.startswith("tick ")]
        assert ticks == [f"tick {i}" for i in range(20)], followed.stdout
        final = slurm_cluster.wait_done(first, job_dir=first_dir)
        assert final["state"] == "COMPLETED"

        cancelled = orch("cancel", second)
        assert cancelled.returncode == 0, cancelled.stderr
        assert slurm_cluster.wait_done(second, job_dir=second_dir)["state"] == "CANCELLED"

        listed = orch("list")  # the laptop: its remote jobs beside its local ones
        assert listed.returncode == 0, listed.stderr
        assert all(any(f" {job} " in line and "REMOTE" in line for line in listed.stdout.splitlines())
                   for job in (first, second))
        there = orch("list", "--cluster", str(remote_yaml))  # the cluster's own list, with Slurm's states
        assert there.returncode == 0, there.stderr
        assert any(first in line and "COMPLETED" in line for line in there.stdout.splitlines())
        subprocess.run(["ssh", "-F", str(server.ssh_config), "-o", f"ControlPath={sockets}/{_one(sockets)}",
                        "-O", "exit", "orchtest"], capture_output=True, check=False, timeout=10)
        shutil.rmtree(sockets, ignore_errors=True)


def _one(folder: Path) -> str:
    return next((name for name in os.listdir(folder) if not name.startswith(".")), "none")
