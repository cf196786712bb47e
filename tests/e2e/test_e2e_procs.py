"""On the local Slurm cluster: a single-node script job's rendezvous store listens on loopback
only, and no process of a job (a helper that ignores SIGTERM, a double-forked daemon that left the
session) is left after ``scancel``.

The test cluster uses ``ProctrackType=proctrack/linuxproc`` (no cgroup): what ends the daemon here is
the task itself (a child subreaper that stops its descendants on SIGTERM, ``orchestrator.task.launch``).
On clusters with ``proctrack/cgroup`` Slurm kills every process of the step's cgroup anyway.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import LOOPBACK4, LOOPBACK6, listeners

from orchestrator.task import reaper

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def _wait_for(paths: list[Path], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        assert time.monotonic() < deadline, f"timed out waiting for {paths}"
        time.sleep(0.1)


def test_a_single_node_script_jobs_store_listens_on_loopback_only(slurm_cluster: SlurmCluster,
                                                                  tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    job_id, job_dir = slurm_cluster.submit(str(SCRIPTS / "hold_store.py"), "--nodes", "1", "--gpus", "2",
                                           "--", str(out), "env")
    try:
        _wait_for([out / "ready"])
        port = int((out / "ready").read_text())
        seen = listeners(port)
    finally:
        (out / "go").write_text("")
    final = slurm_cluster.wait_done(job_id, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    assert seen and set(seen) <= {LOOPBACK4, LOOPBACK6}, seen


def test_no_process_of_a_job_is_left_after_scancel(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    job_id, job_dir = slurm_cluster.submit(str(SCRIPTS / "leaky.py"), "--nodes", "1", "--gpus", "2",
                                           "--", str(out), "wait", "0", "1")
    _wait_for([out / "ready-rank0", out / "ready-rank1"])
    pids = {p.name: int(p.read_text()) for p in out.glob("*.pid")}
    assert {"helper-rank0.pid", "daemon-rank0.pid", "helper-rank1.pid", "daemon-rank1.pid"} <= set(pids), pids
    assert slurm_cluster.client("scancel", job_id).returncode == 0
    slurm_cluster.wait_done(job_id, job_dir=job_dir)
    deadline = time.monotonic() + 60
    left = pids
    while left and time.monotonic() < deadline:
        left = {name: pid for name, pid in left.items() if reaper.alive(pid)}
        time.sleep(0.2)
    assert left == {}, left
