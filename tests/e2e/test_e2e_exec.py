"""Your own batch script on the local Slurm cluster: a hand-written sbatch script (2 nodes x 2 tasks, a site's
set-up lines, no orch submit) whose ``srun`` runs ``orch exec`` on the unmodified torchrun-style
``tests/scripts/ddp_train.py``. The four tasks train as one world (gloo), and ``orch status`` / ``orch logs``
of the step's job folder show the job."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from support import ORCH

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
DDP = ROOT / "tests" / "scripts" / "ddp_train.py"
BATCH = """\
#!/bin/bash
#SBATCH --job-name=byo-exec
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --time=00:05:00
#SBATCH --output={log}

# a site's own set-up, kept as it is
# module load cuda
# source ~/miniconda3/etc/profile.d/conda.sh && conda activate train
export SITE_SETUP=done
cd {cwd}

srun {orch} exec {script} --cluster {cluster} -- --out {out} --steps 3
"""


def _wait_for(path: Path, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not path.is_file():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: {path} did not appear within {timeout:.0f} s")
        time.sleep(0.5)


def _records(out: Path, n: int) -> list[dict[str, Any]]:
    return [json.loads((out / f"rank{r}.json").read_text(encoding="utf-8")) for r in range(n)]


def test_a_hand_written_batch_script_trains_as_one_world(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    if len(slurm_cluster.nodes()) < 2:
        pytest.skip(f"needs 2 nodes, the cluster has {len(slurm_cluster.nodes())}")
    out, log = tmp_path / "out", tmp_path / "batch.out"
    script = tmp_path / "train.sbatch"
    script.write_text(BATCH.format(log=shlex.quote(str(log)), cwd=shlex.quote(str(tmp_path)),
                                   orch=shlex.quote(ORCH), script=shlex.quote(str(DDP)),
                                   cluster=shlex.quote(str(slurm_cluster.cluster_yaml)), out=shlex.quote(str(out))))
    submitted = slurm_cluster.client("sbatch", "--parsable", str(script))
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip().split(";")[0]
    job_dir = slurm_cluster.job_root / f"byo-exec-{job_id}.0"
    _wait_for(job_dir / "job.json", 180, f"job {job_id} never made its folder (batch log {log})")

    final = slurm_cluster.wait_done(job_id, job_dir=job_dir)  # orch status JOBID: found in the index
    assert final["state"] == "COMPLETED", f"{log.read_text(errors='replace')}\n{slurm_cluster.describe(job_dir)}"
    records = _records(out, 4)
    for rank, rec in enumerate(records):
        assert (rec["env"]["RANK"], rec["env"]["LOCAL_RANK"], rec["env"]["GROUP_RANK"]) == \
               (str(rank), str(rank % 2), str(rank // 2))
        assert (rec["env"]["WORLD_SIZE"], rec["env"]["TORCHELASTIC_RUN_ID"], rec["world"]) == ("4", job_id, 4)
        assert rec["params"] == records[0]["params"]  # DDP kept the four replicas identical: one world
        outcome = json.loads((job_dir / "logs" / f"rank{rank}.outcome.json").read_text())
        assert (outcome["kind"], outcome["run"]) == ("completed", job_id)
    assert len({rec["env"]["MASTER_PORT"] for rec in records}) == 1
    config = json.loads((job_dir / "job.json").read_text())
    assert (config["mode"], config["nodes"], config["tasks_per_node"], config["job_name"]) == \
           ("slurm", 2, 2, "byo-exec")
    assert f"job folder {job_dir}" in log.read_text(errors="replace")  # task 0 said where

    shown = slurm_cluster.orch("status", str(job_dir), "--json", "--cluster", str(slurm_cluster.cluster_yaml),
                               check=True)
    status = json.loads(shown.stdout)
    assert (status["job_id"], status["state"], status.get("reused")) == (job_id, "COMPLETED", None), status
    logs = slurm_cluster.orch("logs", str(job_dir), "--all-ranks", check=True)
    assert logs.returncode == 0, logs.stderr
    assert sorted(p.name for p in (job_dir / "logs").glob(f"{job_id}-rank*.out")) == \
           [f"{job_id}-rank{r}.out" for r in range(4)]
    assert sys.executable  # the batch script ran the orch next to this interpreter (ORCH)
