"""Two unprivileged users share one job root, as a site's scratch folder is shared (``$STATE/jobs``: root's,
mode 1777, made by ``cluster.sh up``). The test user submits a job and a script there; the second user
(``ORCH_TEST_USER2``, reached through the one sudo rule ``cluster.sh`` writes) then lists, asks the status of
everything, submits a job and the same script, and both jobs of each user complete. Neither user can read
the other's job folders or code snapshots, nothing says "Permission denied", and each user's ``orch list``
shows their own jobs only."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml
from support import ROOT

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SECOND = os.environ.get("ORCH_TEST_USER2", "")
DDP = ROOT / "tests" / "scripts" / "ddp_train.py"


class SecondUser:
    """Runs commands as the second user: ``sudo -n -u USER2 env VARS... CMD`` (sudo resets the environment)."""

    def __init__(self, name: str, cluster: SlurmCluster) -> None:
        self.name = name
        self.cluster = cluster
        self.orch_bin = str(Path(os.environ.get("ORCH_TEST_PYTHON", "python")).parent / "orch")
        self.home = Path(self.run("sh", "-c", 'printf %s "$HOME"').stdout)
        self.tmp = Path(self.run("mktemp", "-d").stdout.strip())

    def run(self, *argv: str, stdin: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        pairs = [f"{k}={v}" for k, v in (env or {}).items()]
        return subprocess.run(["sudo", "-n", "-H", "-u", self.name, "--", "env", *pairs, *argv], input=stdin,
                              capture_output=True, text=True, timeout=timeout, check=False, cwd=ROOT)

    def orch(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        env = {"SLURM_CONF": str(self.cluster.conf), "ORCH_STATE_DIR": str(self.tmp / "state"),
               "PATH": f"{Path(self.orch_bin).parent}:/usr/bin:/bin"}
        return self.run(self.orch_bin, *args, env=env, timeout=timeout)

    def write(self, path: Path, text: str) -> None:
        done = self.run("sh", "-c", f"umask 077 && cat > {shlex.quote(str(path))}", stdin=text)
        assert done.returncode == 0, done.stderr

    def can_read(self, path: Path) -> bool:
        return self.run("test", "-r", str(path), "-a", "-x", str(path)).returncode == 0


@pytest.fixture
def second_user(slurm_cluster: SlurmCluster) -> SecondUser:
    if not SECOND:
        pytest.skip("no second test user (ORCH_TEST_USER2: cluster.sh up as root makes it)")
    if subprocess.run(["sudo", "-n", "-u", SECOND, "true"], capture_output=True, check=False).returncode != 0:
        pytest.skip(f"cannot act as {SECOND} (sudo -n -u {SECOND}): run as ORCH_TEST_USER after cluster.sh up")
    return SecondUser(SECOND, slurm_cluster)


def _shared_yaml(cluster: SlurmCluster) -> str:
    data = yaml.safe_load(cluster.cluster_yaml.read_text())
    data["launcher"]["job_root"] = str(cluster.state / "jobs")
    return yaml.safe_dump(data, sort_keys=False)


def _submitted(proc: subprocess.CompletedProcess[str]) -> tuple[str, Path]:
    assert proc.returncode == 0 and "Permission denied" not in proc.stderr, proc.stderr
    data = json.loads(proc.stdout)
    return str(data["job_id"]), Path(data["job_dir"])


def _second_users_state(user: SecondUser, job_id: str, cluster_file: Path) -> dict[str, object]:
    deadline = time.monotonic() + 180
    status: dict[str, object] = {}
    while time.monotonic() < deadline:
        proc = user.orch("status", job_id, "--json", "--cluster", str(cluster_file))
        assert proc.returncode == 0 and "Permission denied" not in proc.stderr, proc.stderr
        status = json.loads(proc.stdout)
        if status.get("terminal"):
            return status
        time.sleep(0.5)
    raise AssertionError(f"{user.name}'s job {job_id} did not end within 180 s: {status}")


def test_two_users_share_one_job_root(slurm_cluster: SlurmCluster, second_user: SecondUser,
                                      tmp_path: Path) -> None:
    shared_root = slurm_cluster.state / "jobs"
    text = _shared_yaml(slurm_cluster)
    mine = tmp_path / "shared.yaml"
    mine.write_text(text)
    theirs = second_user.tmp / "shared.yaml"
    second_user.write(theirs, text)

    # the first user: a job and a script (its snapshot goes to this user's store); one rank each, as the second
    # user's: the folders, snapshots and views are the point, a second rank of the script proved nothing more
    my_job, my_job_dir = slurm_cluster.submit("smoke", "--nodes", "1", "--gpus", "1", cluster_yaml=mine)
    my_script, my_script_dir = slurm_cluster.submit(str(DDP), "--nodes", "1", "--gpus", "1", "--", "--out",
                                                   str(tmp_path / "out"), "--steps", "2", cluster_yaml=mine)
    for job_id, job_dir in ((my_job, my_job_dir), (my_script, my_script_dir)):
        assert job_dir.parent == shared_root
        final = slurm_cluster.wait_done(job_id, job_dir=job_dir)
        assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)

    # the second user meets the first user's private folders and works beside them
    listed = second_user.orch("list", "--cluster", str(theirs))
    assert listed.returncode == 0 and "Permission denied" not in listed.stderr, listed.stderr
    assert my_job_dir.name not in listed.stdout and my_script_dir.name not in listed.stdout, listed.stdout
    everything = second_user.orch("status", "--cluster", str(theirs))
    assert everything.returncode == 0 and "Permission denied" not in everything.stderr, everything.stderr
    nodes = second_user.orch("nodes", "--cluster", str(theirs))
    assert nodes.returncode == 0 and "Permission denied" not in nodes.stderr, nodes.stderr
    their_job, their_job_dir = _submitted(
        second_user.orch("submit", "smoke", "--nodes", "1", "--gpus", "1", "--json", "--cluster", str(theirs)))
    their_script, their_script_dir = _submitted(second_user.orch(
        "submit", str(DDP), "--nodes", "1", "--gpus", "1", "--json", "--cluster", str(theirs), "--", "--out",
        str(second_user.tmp / "out"), "--steps", "2"))
    for job_id in (their_job, their_script):
        final = _second_users_state(second_user, job_id, theirs)
        assert final["state"] == "COMPLETED", final

    # each user's folders and code snapshots are private to them
    assert their_job_dir.parent == shared_root and their_script_dir.parent == shared_root
    for folder in (their_job_dir, their_script_dir):
        assert not os.access(folder, os.R_OK), oct(folder.stat().st_mode)
    for folder in (my_job_dir, my_script_dir):
        assert not second_user.can_read(folder), folder
    my_store = shared_root / f".snapshots-{os.getuid()}"
    their_uid = int(second_user.run("id", "-u").stdout)
    their_store = shared_root / f".snapshots-{their_uid}"
    mine_json = json.loads((my_script_dir / "job.json").read_text())
    assert Path(mine_json["snapshot"]["path"]).parent == my_store, mine_json["snapshot"]
    assert their_store.is_dir() and their_store.stat().st_uid == their_uid
    assert not os.access(their_store, os.R_OK) and not second_user.can_read(my_store)

    # and the first user's view is unchanged: its own jobs, not the second user's
    again = slurm_cluster.orch("list", "--cluster", str(mine))
    assert again.returncode == 0 and "Permission denied" not in again.stderr, again.stderr
    assert my_job_dir.name in again.stdout and their_job_dir.name not in again.stdout, again.stdout
    status = slurm_cluster.orch("status", my_job, "--json", "--cluster", str(mine))
    assert status.returncode == 0 and json.loads(status.stdout)["state"] == "COMPLETED", status.stderr
