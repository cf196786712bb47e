"""What only a user meets: a log its owner cannot read, a job root the user cannot write, a HOME that does not exist.

Root reads and writes anything, so these cases only show as the local cluster's unprivileged user
(scripts/test.sh runs tests/e2e/ as that user). Each ends with a clear message naming the path (and a HINT
where the user must act), the exit code the CLI documents, and never a traceback from orch's own code.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import ORCH

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SMOKE_FAST = ["epochs=1", "samples=64", "test_samples=16"]


@pytest.fixture(autouse=True)
def _as_a_user() -> None:
    if os.geteuid() == 0:
        pytest.skip("runs as the cluster's unprivileged user (scripts/test.sh, docs/testing.md): root reads and "
                    "writes anything, so it cannot show what a user meets")


def _orch(*argv: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([ORCH, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _env(slurm_cluster: SlurmCluster, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in slurm_cluster.env.items() if not k.startswith("SLURM_")}
    env.update(ORCH_STATE_DIR=str(tmp_path / "state"), **extra)
    return env


def test_a_job_root_the_user_cannot_write_is_a_clear_error(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    root_owned = slurm_cluster.state / "etc"  # the cluster's configuration: root's, readable, not writable
    assert not os.access(root_owned, os.W_OK)
    before = set(root_owned.iterdir())
    proc = _orch("run", "smoke", "--nproc", "1", "--job-root", str(root_owned), *SMOKE_FAST, cwd=tmp_path,
                 env=_env(slurm_cluster, tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert f"orch: error: cannot write the job folder at {root_owned}/" in proc.stderr, proc.stderr
    assert "Permission denied" in proc.stderr and "HINT:" in proc.stderr
    assert set(root_owned.iterdir()) == before


def test_a_home_that_does_not_exist(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """No cache folder can be made under it: the dry run and a local run still work (the cache only saves time)."""
    home = Path("/nonexistent/orch-user")  # a service account's HOME: neither it nor its parent can be made
    env = _env(slurm_cluster, tmp_path, HOME=str(home))
    env.pop("XDG_CACHE_HOME", None)
    dry = _orch("submit", "smoke", "--nodes", "1", "--gpus", "1", "--dry-run", "--cluster",
                str(slurm_cluster.cluster_yaml), cwd=tmp_path, env=env)
    assert dry.returncode == 0 and "#SBATCH --nodes=1" in dry.stdout, dry.stderr
    run = _orch("run", "smoke", "--nproc", "1", "--job-root", str(tmp_path / "jobs"), "--json", *SMOKE_FAST,
                cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["status"] == "completed"
    assert not home.exists()


def test_a_log_its_owner_cannot_read_is_named_not_fatal(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    env = _env(slurm_cluster, tmp_path)
    run = _orch("run", "smoke", "--nproc", "1", "--job-root", str(tmp_path / "jobs"), "--json", *SMOKE_FAST,
                cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr
    folder = Path(json.loads(run.stdout)["job_dir"])
    log = folder / "logs" / "local-rank0.out"
    metrics = folder / "metrics.jsonl"
    log.chmod(0)
    metrics.chmod(0)
    try:
        logs = _orch("logs", str(folder), cwd=tmp_path, env=env)
        assert logs.returncode == 0, logs.stderr
        assert f"{log}" in logs.stderr and "Permission denied" in logs.stderr, logs.stderr
        status = _orch("status", str(folder), cwd=tmp_path, env=env)
        assert status.returncode == 0 and "COMPLETED" in status.stdout, status.stderr
        assert f"{metrics} cannot be read (Permission denied)" in status.stderr, status.stderr
        plot = _orch("plot", str(folder), "-o", str(tmp_path / "curves.png"), cwd=tmp_path, env=env)
        assert "Traceback" not in plot.stderr and str(metrics) in plot.stderr, plot.stderr
    finally:
        log.chmod(0o600)
        metrics.chmod(0o600)
