"""A job root shared with other users (launcher.job_root on a scratch folder, mode 1777, as sites do) that
already holds another user's private job folders and snapshot store: the test user's ``orch list``, ``orch
status`` and ``orch submit --dry-run`` (a job and a script) leave them out, say no "Permission denied", and a
script's snapshot goes to this user's own store (``.snapshots-<uid>``). ``cluster.sh up`` (as root) put
root's folders there (``seed_other_user``); no Slurm job is queued here."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml
from support import ROOT

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm]

OTHER_USERS_JOB = "smoke-20000101-000000-0a0b0c"  # tests/slurm/cluster.sh seed_other_user


@pytest.fixture
def shared(slurm_cluster: SlurmCluster, tmp_path: Path) -> Path:
    """A cluster file whose job root is the cluster's shared one (``$ORCH_SLURM_STATE/jobs``)."""
    root = slurm_cluster.state / "jobs"
    other = root / OTHER_USERS_JOB
    if not other.exists() or os.access(other, os.R_OK) or (root / ".snapshots").stat().st_uid == os.getuid():
        pytest.skip("no other user's private folders in the shared job root (run as the test user after "
                    "cluster.sh up as root)")
    data = yaml.safe_load(slurm_cluster.cluster_yaml.read_text())
    data["launcher"]["job_root"] = str(root)
    path = tmp_path / "shared.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_second_user_works_beside_another_users_private_folders(slurm_cluster: SlurmCluster,
                                                                   shared: Path) -> None:
    listed = slurm_cluster.orch("list", "--cluster", str(shared))
    assert listed.returncode == 0, listed.stderr
    assert OTHER_USERS_JOB not in listed.stdout and "Permission denied" not in listed.stderr, listed
    status = slurm_cluster.orch("status", "--cluster", str(shared))
    assert "Permission denied" not in status.stderr, status.stderr
    job = slurm_cluster.orch("submit", "smoke", "--nodes", "1", "--gpus", "1", "--dry-run", "--cluster", str(shared))
    assert job.returncode == 0 and "Permission denied" not in job.stderr, job.stderr
    script = slurm_cluster.orch("submit", str(ROOT / "tests" / "scripts" / "ddp_train.py"), "--nodes", "1",
                                "--gpus", "1", "--dry-run", "--json", "--cluster", str(shared))
    assert script.returncode == 0, script.stderr
    store = json.loads(script.stdout)["snapshot"]["store"]
    assert store == str(slurm_cluster.state / "jobs" / f".snapshots-{os.getuid()}"), store
