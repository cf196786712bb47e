"""End to end on the local Slurm cluster, as the user, 2 nodes: a script whose rank 1's data loader blocks in
``time.sleep`` (tests/scripts/hang_loader.py) under ``--collective-timeout 5``. The job ends within the timeout
+ 15 s of the hang, ``orch status --json`` and ``orch logs`` name rank 1 with its file:line and rank 0's
collective, and no task process is left on any node (they share this host's /proc)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from orchestrator.spec.runconfig import LOG_DIR

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

LOADER = Path(__file__).resolve().parents[1] / "scripts" / "hang_loader.py"
TIMEOUT_S = 5
MARGIN_S = 15


def _line(code: str) -> int:
    return next(n for n, line in enumerate(LOADER.read_text(encoding="utf-8").splitlines(), 1) if line.strip() == code)


def test_a_stuck_data_loader_on_two_nodes_is_named_with_its_line(slurm_cluster: SlurmCluster) -> None:
    cluster = slurm_cluster
    job_id, job_dir = cluster.submit(str(LOADER), "--nodes", "2", "--gpus", "1", "--cpus-per-task", "1",
                                     "--collective-timeout", str(TIMEOUT_S), "--max-restarts", "0")
    status = cluster.wait_done(job_id, timeout=300, job_dir=job_dir)
    detail = f"{status}\n{cluster.describe(job_dir)}"
    assert status["state"] == "FAILED", detail
    failure = status["failure"]
    expected = (f"rank 1 stopped at hang_loader.py:{_line('time.sleep(10**6)')} in load_batch (time.sleep) while "
                f"rank 0 waited in all_reduce at hang_loader.py:{_line('loss.backward()')} in <module> (loss.backward)")
    assert failure["rank"] == 1 and failure["place"] == expected, detail
    assert {p["rank"]: p["state"] for p in failure["places"]} == {0: "collective", 1: "user"}, detail
    logs = cluster.orch("logs", job_id, "--cluster", str(cluster.cluster_yaml), check=True)
    assert f"orch: look at rank 1: {expected}" in logs.stderr, logs.stderr
    hung = float(re.findall(r"rank 1 hung at ([0-9.]+)", log_text(job_dir, job_id))[-1])
    ended = max(json.loads((job_dir / LOG_DIR / f"rank{r}.outcome.json").read_text())["ended"] for r in (0, 1))
    print(f"slurm, 2 nodes: hang -> last rank ended {ended - hung:.1f} s")
    assert ended - hung <= TIMEOUT_S + MARGIN_S, detail
    assert cluster.job_processes(job_id) == []


def log_text(job_dir: Path, job_id: str) -> str:
    return (job_dir / LOG_DIR / f"{job_id}-rank1.out").read_text(errors="replace")
