"""MASTER_PORT: jobs side by side never share it, and a port that is already taken is a clear error.

* Slurm jobs: ``masterport.master_port`` over job ids (hypothesis): any two jobs whose ids differ by
  less than the size of the port range get different ports (jobs that run side by side on one node
  were submitted close together); a requeued job moves to another port; the batch script's
  ``launch --master-port`` agrees with it.
* A port taken when rank 0 starts (a socket listening on it, then a 2-rank job through the real
  launcher with that MASTER_PORT): rank 0 says which port is taken, the job ends quickly with a
  non-zero exit, and no process is left behind.
* Two local runs side by side both complete.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import ORCH, ROOT, clean_environ

from orchestrator.env import masterport
from orchestrator.local.runner import LocalRunner
from orchestrator.records.jobcreate import create_job_dir, write_run_config
from orchestrator.spec.cluster import Launcher
from orchestrator.spec.runconfig import LOG_DIR, RunConfig

SMOKE = ROOT / "jobs" / "smoke.py"
RANGES = [(29500, 39499), (20000, 20009), (40000, 40000 + 999), (1024, 65535), (50000, 50001)]


@settings(max_examples=400, derandomize=True, deadline=None, database=None)
@given(
    port_range=st.sampled_from(RANGES),
    job=st.integers(0, 2**31),
    gap=st.integers(1, 70000),
    restarts=st.integers(0, 20),
)
def test_jobs_closer_than_the_range_never_share_a_port(
    port_range: tuple[int, int], job: int, gap: int, restarts: int
) -> None:
    low, high = port_range
    span = high - low + 1
    a = masterport.master_port(job, restarts, port_range)
    b = masterport.master_port(job + gap, restarts, port_range)
    assert low <= a <= high and low <= b <= high
    if gap % span:
        assert a != b, (job, gap, span)
    assert a == masterport.master_port(str(job), restarts, port_range), "every rank computes the same port"


@settings(max_examples=200, derandomize=True, deadline=None, database=None)
@given(job=st.integers(0, 2**31), restarts=st.integers(0, 50))
def test_a_requeued_job_moves_to_another_port(job: int, restarts: int) -> None:
    ports = (29500, 39499)
    assert masterport.master_port(job, restarts, ports) != masterport.master_port(job, restarts + 1, ports)


def test_a_window_of_consecutive_jobs_all_differ() -> None:
    """10,000 consecutive job ids (a busy day on one cluster) with the default range: all distinct."""
    ports = {masterport.master_port(job, 0, (29500, 39499)) for job in range(7_000_000, 7_010_000)}
    assert len(ports) == 10_000


def test_batch_script_port_agrees_with_the_derivation(tmp_path: Path) -> None:
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    write_run_config(job_dir, _config(job_dir, Launcher(port_range=(31000, 31099))))
    for job_id, restarts in (("123", "0"), ("124", "0"), ("123", "1")):
        proc = subprocess.run(
            [sys.executable, "-m", "orchestrator.runtime.launch", "--master-port", "--job-dir", str(job_dir)],
            env=clean_environ(SLURM_JOB_ID=job_id, SLURM_RESTART_COUNT=restarts),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert int(proc.stdout) == masterport.master_port(job_id, int(restarts), (31000, 31099))


# --- a port that is already taken -------------------------------------------------------------


def _config(job_dir: Path, launcher: Launcher, nproc: int = 2) -> RunConfig:
    return RunConfig(
        mode="local",
        job_name="smoke",
        job_file=str(SMOKE),
        params={"epochs": 1, "samples": 64, "test_samples": 16},
        nodes=1,
        gpus_per_node=0,
        tasks_per_node=nproc,
        cpus_per_task=1,
        job_dir=str(job_dir),
        launcher=launcher,
        created=datetime.now().isoformat(timespec="seconds"),
    )


@pytest.mark.slow
@pytest.mark.parametrize("bind_all", [False, True], ids=["loopback", "all-interfaces"])
def test_taken_port_is_a_clear_error_not_a_hang(bind_all: bool, tmp_path: Path) -> None:
    """Something else listens on MASTER_PORT: rank 0 names the port, the job stops long before the
    init timeout, non-zero, and the rank that hit it is named."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("0.0.0.0" if bind_all else "127.0.0.1", 0))
    sock.listen(8)
    port = sock.getsockname()[1]
    timeout = 60
    job_dir = create_job_dir(tmp_path / "jobs" / "smoke")
    write_run_config(job_dir, _config(job_dir, Launcher(init_timeout=timeout)))
    try:
        started = time.monotonic()
        result = LocalRunner(job_dir=job_dir, nproc=2, environ=clean_environ(), port=port, grace=2).run()
        elapsed = time.monotonic() - started
    finally:
        sock.close()
    log0 = (job_dir / LOG_DIR / "local-rank0.out").read_text(encoding="utf-8")
    assert result.exit_code != 0 and result.status == "failed", log0
    assert result.failed_rank == 0, (result.message, log0)
    assert f"rank 0 cannot listen on 127.0.0.1:{port}: the port is already in use" in log0
    assert "HINT:" in log0 and "port_range" in log0
    assert elapsed < timeout, f"the job waited {elapsed:.0f} s, as long as the init timeout"


@pytest.mark.slow
def test_two_local_runs_side_by_side_both_complete(tmp_path: Path) -> None:
    argv = [
        ORCH,
        "run",
        "smoke",
        "--nproc",
        "2",
        "--job-root",
        str(tmp_path / "jobs"),
        "--json",
        "epochs=1",
        "samples=256",
        "test_samples=64",
    ]
    procs = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_environ())
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err[-3000:]
        assert json.loads(out)["status"] == "completed"


def test_the_agents_port_is_half_the_range_from_master_port_and_never_it() -> None:
    """A script's agents on several nodes meet there (restarts/protocol.py's agents_apart): every rank computes it
    alike from MASTER_PORT, and it is never MASTER_PORT (the script's own rendezvous)."""
    assert masterport.agents_port(29500, (29500, 39499)) == 34500
    assert masterport.agents_port(39000, (29500, 39499)) == 29500 + (9500 + 5000) % 10000
    assert masterport.agents_port(12345, (29500, 39499)) in range(29500, 39500)  # a MASTER_PORT outside the range
    assert masterport.agents_port(50000, (50000, 50000)) == 50001 and masterport.agents_port(65535, (65535, 65535)) \
        == 65534
    for low, high in ((29500, 39499), (20000, 20009), (50000, 50001)):
        for port in range(low, min(high, low + 50) + 1):
            assert masterport.agents_port(port, (low, high)) != port
            assert low <= masterport.agents_port(port, (low, high)) <= high
