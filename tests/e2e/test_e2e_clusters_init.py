"""``orch clusters init NAME`` on the local Slurm cluster, as the user: the file it writes from sinfo plans the
same job as the hand-written cluster file (every rank, and the #SBATCH lines of the resources), and ``orch
clusters`` marks the shipped example (whose partitions this cluster lacks) as not reachable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm]

RESOURCES = ("--partition", "--nodes", "--ntasks-per-node", "--gres", "--cpus-per-task", "--mem", "--time")


def _plan(cluster: SlurmCluster, env: dict[str, str], which: str) -> tuple[list[dict[str, object]], list[str]]:
    proc = cluster.orch("submit", "smoke", "--nodes", "2", "--gpus", "2", "--time", "00:05:00", "--dry-run",
                        "--json", "--cluster", which, env_update=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    lines = [line for line in data["script"].splitlines() if line.startswith("#SBATCH") and
             line.split()[1].split("=")[0] in RESOURCES]
    return data["ranks"], lines


def test_init_writes_a_cluster_file_that_plans_as_the_hand_written_one(slurm_cluster: SlurmCluster,
                                                                        tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    made = slurm_cluster.orch("clusters", "init", "site", "--json", env_update=env)
    assert made.returncode == 0, made.stderr
    written = Path(json.loads(made.stdout)["file"])
    assert written == tmp_path / "config" / "orch" / "clusters" / "site.yaml" and written.is_file()
    again = slurm_cluster.orch("clusters", "init", "site", env_update=env)
    assert again.returncode != 0 and "--force" in again.stderr  # never replaced unasked
    ranks, lines = _plan(slurm_cluster, env, "site")
    want_ranks, want_lines = _plan(slurm_cluster, env, str(slurm_cluster.cluster_yaml))
    assert [{k: r[k] for k in ("rank", "local_rank", "node_rank", "host", "world_size")} for r in ranks] == [
        {k: r[k] for k in ("rank", "local_rank", "node_rank", "host", "world_size")} for r in want_ranks]
    assert lines == want_lines and any(line.startswith("#SBATCH --partition") for line in lines), lines
    listed = json.loads(slurm_cluster.orch("clusters", "--json", env_update=env).stdout)
    rows = {row["pick"]: row for row in listed}
    assert rows["site"]["reachable"] is True, rows
    assert rows["./cluster.yaml"]["reachable"] is False and "not this cluster's" in rows["./cluster.yaml"]["reason"]
