"""One rule for variable names: the names the batch step or the interpreter depend on (PATH, PYTHONHOME,
PYTHONPATH, LD_*, BASH_ENV, ENV, IFS, ...) and launcher-owned or Slurm's names are refused alike by ``--env``
and cluster.yaml ``env`` (exit 2), with the alternative (launcher.setup for PATH); ordinary names pass.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from orchestrator.cli import main

if TYPE_CHECKING:
    from support import Stubs


def orch(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """The CLI in this process (its exit code and stderr): the names are refused before anything runs."""
    code = main(list(args))
    return code, capsys.readouterr().err


# --- one rule for variable names -------------------------------------------------------------

REFUSED = ["PATH", "PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONINSPECT", "LD_PRELOAD", "LD_LIBRARY_PATH",
           "BASH_ENV", "ENV", "IFS", "SLURM_NTASKS", "SRUN_CPUS_PER_TASK", "ROLE_RANK", "ROLE_NAME", "RANK",
           "MASTER_PORT", "JOB_DIR", "SHELLOPTS"]


@pytest.mark.parametrize("name", REFUSED)
def test_env_names_refused_by_env_and_cluster_yaml_alike(name: str, stubs: Stubs, clean_env: pytest.MonkeyPatch,
                                                         write_cluster: Callable[..., Path],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    good = write_cluster()
    by_flag = orch(capsys, "submit", "smoke", "--cluster", str(good), "--dry-run", "--env", f"{name}=/x")
    bad = write_cluster(name="bad.yaml", env={name: "/x"})
    by_file = orch(capsys, "submit", "smoke", "--cluster", str(bad), "--dry-run")
    for code, err in (by_flag, by_file):
        assert code == 2, err
        assert name in err and "Traceback" not in err
    if name in ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH"):
        assert "launcher.setup" in by_flag[1] and "launcher.setup" in by_file[1]


@pytest.mark.parametrize("name", ["MY_VAR", "NCCL_DEBUG", "OMP_NUM_THREADS", "PYTHONUNBUFFERED", "KEYBOARD"])
def test_ordinary_names_pass(name: str, stubs: Stubs, clean_env: pytest.MonkeyPatch,
                             write_cluster: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, err = orch(capsys, "submit", "smoke", "--cluster", str(write_cluster()), "--dry-run", "--env", f"{name}=1")
    assert code == 0, err
