"""Issue 23, classes 2, 10 and 12: secrets stay yours, one rule for variable names, time in UTC.

* ``--env`` with a name that looks like a secret is refused (exit 2) with the ``--pass-env`` hint;
  ``--pass-env NAME`` hands the value over by name: no file of the job folder holds it, sbatch's
  environment does; an unset name or ``NAME=value`` is refused before anything is written.
* Every file and folder of a submitted job is private (0600/0700), sbatch runs with umask 077, and the
  batch script sets umask 077 before it writes anything: under umasks 000, 002, 022, 027 and 277.
* The names the batch step or the interpreter depend on (PATH, PYTHONHOME, PYTHONPATH, LD_*, BASH_ENV,
  ENV, IFS, ...) and launcher-owned or Slurm's names are refused alike by ``--env`` and cluster.yaml
  ``env`` (exit 2), with the alternative (launcher.setup for PATH).
* With a TZ of any offset (huge ones included), submit and list work, folder names and records are UTC.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import ORCH

if TYPE_CHECKING:
    from support import Stubs

SECRET = "v4lue-that-must-n0t-leak"


def orch(stubs: Stubs, cwd: Path, *args: str, umask: int | None = None,
         **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, *args], capture_output=True, text=True, cwd=cwd, timeout=120, check=False,
                          env=stubs.env(**env), preexec_fn=None if umask is None else (lambda: os.umask(umask)))


def every_byte(root: Path) -> bytes:
    return b"\n".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("name", ["WANDB_API_KEY", "HF_TOKEN", "GITHUB_TOKEN_X", "DB_PASSWORD", "MY_SECRET",
                                  "aws_secret_access_key", "OPENAI_API_KEY", "AWS_ACCESS_KEY_ID"])
def test_env_with_a_secret_name_is_refused(name: str, stubs: Stubs, write_cluster: Callable[..., Path],
                                           tmp_path: Path) -> None:
    proc = orch(stubs, tmp_path, "submit", "smoke", "--cluster", str(write_cluster()), "--env", f"{name}={SECRET}")
    assert proc.returncode == 2, proc.stderr
    assert f"--env {name}" in proc.stderr and f"--pass-env {name}" in proc.stderr and "Traceback" not in proc.stderr
    assert stubs.records("sbatch") == [] and not (tmp_path / "jobs").exists()


@pytest.mark.parametrize("names", [["WANDB_API_KEY"], ["HF_TOKEN", "DB_PASSWORD"]])
def test_pass_env_hands_values_over_by_name_only(names: list[str], stubs: Stubs,
                                                 write_cluster: Callable[..., Path], tmp_path: Path) -> None:
    args = [a for n in names for a in ("--pass-env", n)]
    values = {n: f"{SECRET}-{i}" for i, n in enumerate(names)}
    proc = orch(stubs, tmp_path, "submit", "smoke", "--cluster", str(write_cluster()), "--json", *args, **values)
    assert proc.returncode == 0, proc.stderr
    job_dir = Path(json.loads(proc.stdout)["job_dir"])
    assert SECRET.encode() not in every_byte(job_dir)
    script = (job_dir / "sbatch.sh").read_text(encoding="utf-8")
    assert all(f"[[ ! -v {n} ]]" in script for n in names)
    assert json.loads((job_dir / "job.json").read_text())["launcher"]["pass_env"] == names
    [call] = stubs.records("sbatch")
    assert all(call["env"][n] == v for n, v in values.items())


@pytest.mark.parametrize(("arg", "says"), [("NOT_SET_HERE", "not set in this shell"),
                                           ("WANDB_API_KEY=abc", "takes a name, never a value"),
                                           ("PATH", "launcher.setup"), ("1BAD", "not a valid")])
def test_pass_env_refusals(arg: str, says: str, stubs: Stubs, write_cluster: Callable[..., Path],
                           tmp_path: Path) -> None:
    proc = orch(stubs, tmp_path, "submit", "smoke", "--cluster", str(write_cluster()), "--pass-env", arg)
    assert proc.returncode == 2 and says in proc.stderr, proc.stderr
    assert "abc" not in proc.stderr + proc.stdout or "=abc" not in proc.stderr
    assert stubs.records("sbatch") == []


@pytest.mark.parametrize("umask", [0o000, 0o002, 0o022, 0o027, 0o277], ids=lambda u: f"{u:03o}")
def test_submitted_folder_is_private_whatever_the_umask(umask: int, stubs: Stubs,
                                                        write_cluster: Callable[..., Path], tmp_path: Path) -> None:
    cluster = write_cluster()
    os.chmod(cluster, 0o600)
    proc = orch(stubs, tmp_path, "submit", "smoke", "--cluster", str(cluster), "--json", "--sweep", "lr=0.1,0.2",
                umask=umask)
    assert proc.returncode == 0, proc.stderr
    root = Path(json.loads(proc.stdout)["job_dir"]).parent
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        wanted = 0o700 if path.is_dir() or path.name == "sbatch.sh" else 0o600
        assert mode == wanted, f"{path}: {mode:o} under umask {umask:03o}"
    [call] = stubs.records("sbatch")
    assert call["umask"] == 0o077
    assert "\numask 077\n" in call["script"]


# --- one rule for variable names -------------------------------------------------------------

REFUSED = ["PATH", "PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONINSPECT", "LD_PRELOAD", "LD_LIBRARY_PATH",
           "BASH_ENV", "ENV", "IFS", "SLURM_NTASKS", "SRUN_CPUS_PER_TASK", "ROLE_RANK", "ROLE_NAME", "RANK",
           "MASTER_PORT", "JOB_DIR", "SHELLOPTS"]


@pytest.mark.parametrize("name", REFUSED)
def test_env_names_refused_by_env_and_cluster_yaml_alike(name: str, stubs: Stubs,
                                                         write_cluster: Callable[..., Path],
                                                         tmp_path: Path) -> None:
    good = write_cluster()
    by_flag = orch(stubs, tmp_path, "submit", "smoke", "--cluster", str(good), "--dry-run", "--env", f"{name}=/x")
    bad = write_cluster(name="bad.yaml", env={name: "/x"})
    by_file = orch(stubs, tmp_path, "submit", "smoke", "--cluster", str(bad), "--dry-run")
    for proc in (by_flag, by_file):
        assert proc.returncode == 2, proc.stdout[-500:] + proc.stderr
        assert name in proc.stderr and "Traceback" not in proc.stderr
    if name in ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH"):
        assert "launcher.setup" in by_flag.stderr and "launcher.setup" in by_file.stderr


@pytest.mark.parametrize("name", ["MY_VAR", "NCCL_DEBUG", "OMP_NUM_THREADS", "PYTHONUNBUFFERED", "KEYBOARD"])
def test_ordinary_names_pass(name: str, stubs: Stubs, write_cluster: Callable[..., Path], tmp_path: Path) -> None:
    proc = orch(stubs, tmp_path, "submit", "smoke", "--cluster", str(write_cluster()), "--dry-run",
                "--env", f"{name}=1")
    assert proc.returncode == 0, proc.stderr


# --- time in UTC, whatever TZ says -----------------------------------------------------------

@pytest.mark.parametrize("tz", ["UTC", "Pacific/Kiritimati", "XXX-24:59:59", "XXX+24:59:59", "EST5EDT",
                                "<+99>-99", "Nowhere/Invalid"])
def test_folder_names_and_records_are_utc(tz: str, stubs: Stubs, write_cluster: Callable[..., Path],
                                          tmp_path: Path) -> None:
    cluster = write_cluster()
    before = datetime.now(timezone.utc).replace(microsecond=0)
    proc = orch(stubs, tmp_path, "submit", "smoke", "--cluster", str(cluster), "--json", TZ=tz)
    assert proc.returncode == 0, proc.stderr
    job_dir = Path(json.loads(proc.stdout)["job_dir"])
    stamp = re.search(r"-([0-9]{8}-[0-9]{6})-[0-9a-f]+$", job_dir.name)
    assert stamp is not None
    named = datetime.strptime(stamp.group(1), "%Y%m%d-%H%M%S").replace(tzinfo=timezone.utc)
    assert abs((named - before).total_seconds()) < 60, (tz, job_dir.name)
    created = json.loads((job_dir / "job.json").read_text())["created"]
    submitted = json.loads((job_dir / "submitted.json").read_text())["submitted"]
    assert created.endswith("+00:00") and submitted.endswith("+00:00")
    listed = orch(stubs, tmp_path, "list", "--cluster", str(cluster), "--json", TZ=tz)
    assert "Traceback" not in listed.stderr, listed.stderr


def test_newest_first_across_time_zones(stubs: Stubs, write_cluster: Callable[..., Path], tmp_path: Path) -> None:
    """Two submits a second apart under TZs 14 hours apart: the later one is listed first."""
    cluster = write_cluster()
    first = orch(stubs, tmp_path, "submit", "smoke", "--cluster", str(cluster), "--json", TZ="Pacific/Kiritimati")
    import time

    time.sleep(1.1)
    second = orch(stubs, tmp_path, "submit", "smoke", "--cluster", str(cluster), "--json", TZ="Pacific/Honolulu")
    assert first.returncode == second.returncode == 0
    dirs = [json.loads(p.stdout)["job_dir"] for p in (first, second)]
    listed = orch(stubs, tmp_path, "list", "--cluster", str(cluster), "--json", TZ="UTC")
    assert listed.returncode == 0, listed.stderr
    order = [row["job_dir"] for row in json.loads(listed.stdout)]
    assert order.index(dirs[1]) < order.index(dirs[0])


def test_run_pass_env(tmp_path: Path, stubs: Stubs) -> None:
    proc = orch(stubs, tmp_path, "run", "smoke", "--pass-env", "NOT_SET_HERE", "--job-root", str(tmp_path / "j"))
    assert proc.returncode == 2 and "--pass-env: NOT_SET_HERE not set" in proc.stderr, proc.stderr
    assert not (tmp_path / "j").exists()
    proc = orch(stubs, tmp_path, "run", "smoke", "--pass-env", "WANDB_API_KEY=x", "--job-root", str(tmp_path / "j"))
    assert proc.returncode == 2 and "never a value" in proc.stderr, proc.stderr
