"""A script the doctor refuses (DDP003: no DistributedSampler) is queued and runs on the Slurm cluster when
its code is ignored, by --ignore or by cluster.yaml's doctor.ignore; refused, nothing is queued."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml
from support import ORCH

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

BAD = '''import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    loader = DataLoader(data, batch_size=16, shuffle=True)
    model = DDP(torch.nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''


def _submit(cluster: SlurmCluster, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # one rank: the doctor reads the code, whatever the world; the jobs it lets through only have to run (a second
    # rank each cost two rank start-ups and proved nothing more)
    return subprocess.run([ORCH, "submit", "bad_train.py", "--nodes", "1", "--gpus", "1", "--json", *args], cwd=cwd,
                          env=cluster.env, capture_output=True, text=True, timeout=120, check=False)


def test_ignored_codes_let_the_script_run(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    (tmp_path / "bad_train.py").write_text(BAD)
    refused = _submit(slurm_cluster, tmp_path, "--cluster", str(slurm_cluster.cluster_yaml))
    assert refused.returncode == 2 and "orch doctor found errors (DDP003)" in refused.stderr

    by_flag = _submit(slurm_cluster, tmp_path, "--cluster", str(slurm_cluster.cluster_yaml), "--ignore", "DDP003")
    assert by_flag.returncode == 0, by_flag.stderr
    data = yaml.safe_load(Path(slurm_cluster.cluster_yaml).read_text())
    data["doctor"] = {"ignore": ["DDP003"]}
    ignoring = tmp_path / "cluster-ignoring.yaml"
    ignoring.write_text(yaml.safe_dump(data))
    by_cluster = _submit(slurm_cluster, tmp_path, "--cluster", str(ignoring))
    assert by_cluster.returncode == 0, by_cluster.stderr
    for proc in (by_flag, by_cluster):
        job = json.loads(proc.stdout)
        final = slurm_cluster.wait_done(str(job["job_id"]), job_dir=Path(job["job_dir"]))
        assert final["state"] == "COMPLETED", slurm_cluster.describe(Path(job["job_dir"]))
