"""End to end on the local Slurm cluster: ``orch top`` in a real terminal (tmux, 200x50: keys sent, the pane
captured) while one job trains and another loses a rank to SIGKILL. The training job's step count moves on
the screen, the other job's row names the killed rank (BLAMED), and the cancel key asks first and then
cancels the training job (Slurm says CANCELLED). tmux comes with tests/slurm/cluster.sh's packages: a
machine without it fails here rather than skipping."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from support import Tmux, screen_row

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

FAULTY = Path(__file__).resolve().parents[1] / "jobs" / "faulty.py"
ORCH = shutil.which("orch", path=str(Path(sys.executable).parent)) or "orch"
STEP = re.compile(r"step ([0-9]+)/[0-9]+")


def test_top_shows_progress_and_blame_and_cancels(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    cluster = slurm_cluster
    root = tmp_path / "jobs"

    def own_root(data: dict[str, Any]) -> None:  # the two jobs of this test are the table's only rows
        data["launcher"]["job_root"] = str(root)

    cluster_yaml = cluster.derived_cluster_yaml(tmp_path / "cluster.yaml", own_root)
    common = ("--nodes", "2", "--gpus", "1", "--cpus-per-task", "1")
    killed, killed_dir = cluster.submit(str(FAULTY), *common, "--job-name", "top-killed", "--max-restarts", "0",
                                        "epochs=1", "fault=kill", "fault_rank=1", "fault_step=3",
                                        cluster_yaml=cluster_yaml)
    train, train_dir = cluster.submit(str(FAULTY), *common, "--job-name", "top-train", "--max-restarts", "0",
                                      "epochs=40", "step_sleep=0.2", cluster_yaml=cluster_yaml)
    tmux = Tmux("orch-top-e2e", f"{ORCH} top --cluster {cluster_yaml} --interval 0.5 --slurm-interval 1",
                cluster.env, tmp_path)
    try:
        # The killed rank's record names it while the batch script still winds the step down (RUNNING): the row
        # shows the blame first, then FAILED once Slurm has the job's end.
        tmux.wait_for(lambda s: "rank 1" in screen_row(s, "top-killed") and "FAILED" in screen_row(s, "top-killed"),
                      timeout=120, what=f"job {killed} FAILED, rank 1 BLAMED ({cluster.describe(killed_dir)})")

        def step(s: str) -> int | None:
            found = STEP.search(screen_row(s, "top-train"))
            return int(found.group(1)) if found else None

        first = step(tmux.wait_for(lambda s: step(s) is not None and "RUNNING" in screen_row(s, "top-train"),
                                   timeout=120, what=f"job {train}'s step ({cluster.describe(train_dir)})"))
        tmux.wait_for(lambda s: step(s) not in (None, first), timeout=60, what=f"job {train}'s step past {first}")
        tmux.keys("c")  # the newest job is the first row, where the cursor starts
        tmux.wait_for(lambda s: f"Cancel job {train} (top-train)?" in s, what="the cancel question")
        assert cluster.status(train)["state"] == "RUNNING"  # asked first: nothing cancelled yet
        tmux.keys("y")
        tmux.wait_for(lambda s: f"cancelled {train}" in s, what="the cancel answer")
        cluster.wait(train, lambda st: st["state"] == "CANCELLED", timeout=60, job_dir=train_dir, what="CANCELLED")
        tmux.wait_for(lambda s: "CANCELLED" in screen_row(s, "top-train"), timeout=30, what="CANCELLED in the row")
        tmux.keys("q")
    finally:
        tmux.close()
        cluster.client("scancel", train, killed)
