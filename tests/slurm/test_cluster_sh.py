"""tests/slurm/cluster.sh itself, on a second throwaway cluster (own state directory and ports), so
the session's cluster keeps running: idempotent up, status/env, stale PID files, stopping only its own."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

CLUSTER_SH = Path(__file__).resolve().parents[1] / "slurm" / "cluster.sh"
PORT_BASE = "19815"  # far from the default 16815 of the session's cluster

pytestmark = [pytest.mark.slurm]
DAEMONS_3 = ("slurmd-node1", "slurmd-node2", "slurmd-node3")


def test_shellcheck_is_clean() -> None:
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    # -x: the files it sources (testuser.sh) are checked too
    proc = subprocess.run(["shellcheck", "-x", str(CLUSTER_SH)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout


@pytest.fixture
def second() -> Iterator[dict[str, str]]:
    if os.geteuid() != 0 or shutil.which("slurmctld") is None:
        pytest.skip("needs root and Debian's slurm packages (tests/slurm/cluster.sh up installs them)")
    state = Path(tempfile.mkdtemp(prefix="orch-slurm-second-", dir="/tmp"))
    state.chmod(0o755)  # munged wants every directory up to its socket o+x
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(ORCH_SLURM_STATE=str(state), ORCH_SLURM_PORT_BASE=PORT_BASE, ORCH_SLURM_NO_INSTALL="1")
    yield env
    subprocess.run(["bash", str(CLUSTER_SH), "down"], env=env, capture_output=True, timeout=120, check=False)
    shutil.rmtree(state, ignore_errors=True)


def sh(env: dict[str, str], verb: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(CLUSTER_SH), verb], env=env, capture_output=True, text=True,
                          timeout=180, check=False)


def pids(env: dict[str, str]) -> dict[str, str]:
    run = Path(env["ORCH_SLURM_STATE"]) / "run"
    return {p.stem: p.read_text().strip() for p in run.glob("*.pid")}


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def test_up_is_idempotent_and_status_tells_the_truth(second: dict[str, str]) -> None:
    assert sh(second, "status").returncode == 1
    up = sh(second, "up")
    assert up.returncode == 0, up.stderr
    conf = f"{second['ORCH_SLURM_STATE']}/etc/slurm.conf"
    assert up.stdout.splitlines()[0] == f"export SLURM_CONF={conf}"
    first = pids(second)
    assert set(first) == {"munged", "slurmctld", *DAEMONS_3}  # three nodes by default
    again = sh(second, "up")
    assert again.returncode == 0 and "already up" in again.stderr
    assert pids(second) == first  # nothing restarted
    status = sh(second, "status")
    assert status.returncode == 0 and "idle" in status.stdout
    assert sh(second, "env").stdout.splitlines()[0] == f"export SLURM_CONF={conf}"
    yaml_text = (Path(second["ORCH_SLURM_STATE"]) / "cluster.yaml").read_text()
    assert "nodes: node[1-3]" in yaml_text and f"job_root: {second['ORCH_SLURM_STATE']}/jobs" in yaml_text
    # a dead daemon makes it unhealthy, and up brings it back
    os.kill(int(first["slurmd-node2"]), signal.SIGKILL)
    assert sh(second, "status").returncode == 1
    assert sh(second, "up").returncode == 0 and sh(second, "status").returncode == 0


def test_stale_pid_files_never_hit_other_processes(second: dict[str, str]) -> None:
    bystander = subprocess.Popen(["sleep", "300"])
    try:
        assert sh(second, "up").returncode == 0
        assert sh(second, "down").returncode == 0
        # a crash left PID files behind, and the PIDs now belong to someone else
        run = Path(second["ORCH_SLURM_STATE"]) / "run"
        for name in ("munged", "slurmctld", *DAEMONS_3):
            (run / f"{name}.pid").write_text(f"{bystander.pid}\n")
        up = sh(second, "up")
        assert up.returncode == 0, up.stderr
        assert alive(bystander.pid)
        assert bystander.pid not in {int(p) for p in pids(second).values()}
        assert sh(second, "down").returncode == 0
        assert alive(bystander.pid)
        assert all(not alive(int(p)) for p in pids(second).values())
    finally:
        bystander.kill()
        bystander.wait()


def test_down_stops_only_its_own_cluster(second: dict[str, str]) -> None:
    session_run = Path(os.environ.get("ORCH_SLURM_STATE", "/tmp/orch-slurm")) / "run"
    session = [int(p.read_text()) for p in session_run.glob("*.pid")]
    session_alive = [pid for pid in session if alive(pid)]
    assert sh(second, "up").returncode == 0
    started = [int(p) for p in pids(second).values()]
    down = sh(second, "down")
    assert down.returncode == 0, down.stderr
    assert not any(alive(pid) for pid in started)
    assert sh(second, "status").returncode == 1
    # the same daemon names, another state directory: the session's cluster is untouched
    assert all(alive(pid) for pid in session_alive)


def test_status_and_down_follow_the_running_clusters_node_count(second: dict[str, str]) -> None:
    """A cluster started with ORCH_SLURM_NODES=2: status describes it without the variable, up (3 by
    default) starts it again with three, and down stops every node a run left, whatever the variable says."""
    two = {**second, "ORCH_SLURM_NODES": "2"}
    up = sh(two, "up")
    assert up.returncode == 0, up.stderr
    assert set(pids(second)) == {"munged", "slurmctld", "slurmd-node1", "slurmd-node2"}
    status = sh(second, "status")
    assert status.returncode == 0 and "node[1-2]" in status.stdout, status.stdout
    up = sh(second, "up")
    assert up.returncode == 0 and "nodes node1 node2 node3 idle" in up.stderr, up.stderr
    started = pids(second)
    assert set(started) == {"munged", "slurmctld", *DAEMONS_3}
    one = {**second, "ORCH_SLURM_NODES": "1"}
    down = sh(one, "down")
    assert down.returncode == 0, down.stderr
    assert not any(alive(int(pid)) for pid in started.values())  # node2's and node3's slurmd too
    assert sh({**second, "ORCH_SLURM_NODES": "x"}, "status").returncode != 0
