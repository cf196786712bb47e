"""Secrets stay yours: ``--env`` with a name that looks like a secret is refused (exit 2) with the ``--pass-env``
hint; ``--pass-env NAME`` hands the value over by name (``orch submit`` and ``orch run``): no file of the job
folder holds it, sbatch's environment does; an unset name or ``NAME=value`` is refused before anything is
written. Every file and folder of a submitted job is private (0600/0700) under umasks 000, 002, 022, 027, 277.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Callable
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


def test_run_pass_env(tmp_path: Path, stubs: Stubs) -> None:
    proc = orch(stubs, tmp_path, "run", "smoke", "--pass-env", "NOT_SET_HERE", "--job-root", str(tmp_path / "j"))
    assert proc.returncode == 2 and "--pass-env: NOT_SET_HERE not set" in proc.stderr, proc.stderr
    assert not (tmp_path / "j").exists()
    proc = orch(stubs, tmp_path, "run", "smoke", "--pass-env", "WANDB_API_KEY=x", "--job-root", str(tmp_path / "j"))
    assert proc.returncode == 2 and "never a value" in proc.stderr, proc.stderr
