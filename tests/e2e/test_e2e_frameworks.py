"""Framework scripts on the local Slurm cluster (2 nodes, one rank each; the cluster's GPUs are Slurm's
fake ones, no NVIDIA driver: CPU ranks): the unmodified Accelerate and HF ``Trainer`` scripts form one world
of 2 and end with the parameters ``torchrun --nproc-per-node 2`` gives them on this machine with what
``accelerate launch --cpu`` sets; a ``@record`` script failing in rank 1 is blamed with its recorded error
(message, file and line) in ``orch status``; a Hydra app's two ranks share the job folder's ``hydra/``."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from support import once_more_on_teardown_abort

from orchestrator.local.rankenv import free_port
from orchestrator.spec.snapshot import Snapshot, relocate

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "tests" / "scripts"
TIMEOUT = 300
ACCELERATE_CPU = {"ACCELERATE_USE_CPU": "True", "KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "1"}
TWO_NODES = ("--nodes", "2", "--gpus", "1")


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads((out / f"rank{r}.json").read_text(encoding="utf-8")) for r in range(2)]


def _reference(script: Path, out: Path) -> list[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "MASTER_", "RANK", "LOCAL_RANK",
                                                                     "WORLD_SIZE"))}
    proc = once_more_on_teardown_abort(lambda: subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", str(free_port()),
         str(script), "--out", str(out)], env={**env, **ACCELERATE_CPU, "CUDA_VISIBLE_DEVICES": ""},
        capture_output=True, text=True, timeout=TIMEOUT, check=False))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return _records(out)


def _two_nodes(cluster: SlurmCluster) -> None:
    if len(cluster.nodes()) < 2:
        pytest.skip(f"needs 2 nodes; the cluster has {len(cluster.nodes())}")


@pytest.mark.parametrize(("script", "package"), [("accelerate_train.py", "accelerate"),
                                                 ("hf_trainer_train.py", "transformers")])
def test_framework_scripts_form_one_world_on_two_nodes(slurm_cluster: SlurmCluster, tmp_path: Path, script: str,
                                                       package: str) -> None:
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed (pip install -e '.[frameworks]')")
    _two_nodes(slurm_cluster)
    out = tmp_path / "orch"
    job_id, job_dir = slurm_cluster.submit(str(SCRIPTS / script), *TWO_NODES, "--", "--out", str(out))
    reference = _reference(SCRIPTS / script, tmp_path / "reference")
    final = slurm_cluster.wait_done(job_id, timeout=TIMEOUT, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    assert final["world"] is None, final["world"]  # one world: nothing said
    ours = _records(out)
    assert [(r["rank"], r["world_size"]) for r in ours] == [(0, 2), (1, 2)]
    sums = {r["checksum"] for r in ours}
    assert len(sums) == 1 and sums == {r["checksum"] for r in reference}


def test_a_record_scripts_error_is_blamed_under_slurm(slurm_cluster: SlurmCluster) -> None:
    _two_nodes(slurm_cluster)
    job_id, job_dir = slurm_cluster.submit(str(SCRIPTS / "record_error.py"), *TWO_NODES)
    final = slurm_cluster.wait_done(job_id, timeout=TIMEOUT, job_dir=job_dir)
    assert final["state"] == "FAILED", slurm_cluster.describe(job_dir)
    assert final["failure"]["rank"] == 1, final["failure"]
    snap = Snapshot.model_validate(json.loads((job_dir / "job.json").read_text(encoding="utf-8"))["snapshot"])
    ran = relocate(str(SCRIPTS / "record_error.py"), snap)  # the code snapshot's copy is what ran
    assert (f"ValueError: rank 1: batch 3 has no labels (raised at {ran}:15; torchelastic "
            f"error file {job_dir / 'logs' / 'rank1.error.json'})") in final["failure"]["message"]


def test_a_hydra_apps_ranks_share_the_job_folders_run_directory(slurm_cluster: SlurmCluster) -> None:
    if importlib.util.find_spec("hydra") is None:
        pytest.skip("hydra-core is not installed (pip install -e '.[frameworks]')")
    _two_nodes(slurm_cluster)
    job_id, job_dir = slurm_cluster.submit(str(SCRIPTS / "hydra_app.py"), *TWO_NODES, "--", "lr=0.1")
    final = slurm_cluster.wait_done(job_id, timeout=TIMEOUT, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    run_dir = job_dir / "hydra"
    records = [json.loads((run_dir / f"rank{r}.json").read_text(encoding="utf-8")) for r in range(2)]
    assert {r["run_dir"] for r in records} == {str(run_dir)} and records[0]["checksum"] == records[1]["checksum"]
    assert (run_dir / ".hydra" / "config.yaml").is_file() and (run_dir / "hydra_app_rank1.log").is_file()
