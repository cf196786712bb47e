"""One rule for variable names: the names the batch step or the interpreter depend on (PATH, PYTHONHOME,
PYTHONPATH, LD_*, BASH_ENV, ENV, IFS, ...) and launcher-owned or Slurm's names are refused alike by ``--env``
and cluster.yaml ``env`` (exit 2), with the alternative (launcher.setup for PATH); ordinary names pass.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import ORCH

if TYPE_CHECKING:
    from support import Stubs


def orch(stubs: Stubs, cwd: Path, *args: str, umask: int | None = None,
         **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, *args], capture_output=True, text=True, cwd=cwd, timeout=120, check=False,
                          env=stubs.env(**env), preexec_fn=None if umask is None else (lambda: os.umask(umask)))


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
