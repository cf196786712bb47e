"""The variable names the batch script owns (``extras.SCRIPT_VARIABLES``, the launcher's, Slurm's, bash's)
are refused in cluster.yaml ``env`` (exit 2, never run), ordinary names pass, values Slurm cannot carry are
refused, and the table lists every variable the built-in templates assign.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import cluster_file, expect_refused

from orchestrator.slurm.render import BUILTIN_TEMPLATES
from orchestrator.spec.extras import SCRIPT_VARIABLES, check_env_var

if TYPE_CHECKING:
    from support import Stubs


# --- names the script owns ----------------------------------------------------------------------

OWNED = [*sorted(SCRIPT_VARIABLES),
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_PORT", "MASTER_ADDR", "NODE_RANK", "CUDA_VISIBLE_DEVICES",
    "BASHOPTS", "SHELLOPTS", "EUID", "PPID", "UID", "IFS", "BASH_ENV", "BASH_FUNC_x%%", "BASH", "SECONDS",
    "RANDOM", "POSIXLY_CORRECT", "SLURM_JOB_ID", "SLURM_NTASKS", "SLURM_ANYTHING", "SRUN_CPUS_PER_TASK",
    "SBATCH_EXPORT", "SLURMD_NODENAME", "1ABC", "A-B", "", "A B", "ÄNDERN",
]


@pytest.mark.parametrize("name", OWNED)
def test_owned_names_are_refused_in_env(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        stubs: Stubs) -> None:
    with pytest.raises(ValueError):
        check_env_var(name, "1")
    path = cluster_file(tmp_path, env={name: "a[$(touch PWNED)]"})
    expect_refused(["submit", "smoke", "--cluster", str(path), "--dry-run"], capsys, ["env"],
                   jobs=tmp_path / "jobs", stubs=stubs)
    assert not (tmp_path / "PWNED").exists()


# PATH and PYTHONPATH are not here: refused (launcher.setup changes them; tests/spec/test_envnames.py)
@pytest.mark.parametrize("name", ["NCCL_DEBUG", "OMP_NUM_THREADS", "http_proxy", "PYTHONUNBUFFERED",
                                  "WANDB_API_KEY", "ORCH_DATA_DIR", "MY_SIGNALS", "slurm_x", "_"])
def test_ordinary_names_are_accepted(name: str) -> None:
    check_env_var(name, "value with spaces and $(dollar)")


@pytest.mark.parametrize("value", ["a\nb", "a\rb", "a\0b"])
def test_env_values_slurm_cannot_carry_are_refused(value: str) -> None:
    with pytest.raises(ValueError, match="cannot carry"):
        check_env_var("NCCL_DEBUG", value)


def _assigned_names(text: str) -> set[str]:
    """Shell variables a template assigns: NAME=..., for NAME in, read NAME, (( NAME ... ))."""
    names = set(re.findall(r"(?m)^\s*(?:export\s+|local\s+|readonly\s+)?([A-Za-z_][A-Za-z0-9_]*)\+?=", text))
    names |= set(re.findall(r"\bfor\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\b", text))
    names |= set(re.findall(r"\bread\s+(?:-\w+\s+)*([A-Za-z_][A-Za-z0-9_]*)", text))
    return names


def test_the_owned_table_lists_every_variable_the_templates_assign() -> None:
    assigned: set[str] = set()
    for path in BUILTIN_TEMPLATES.glob("*.j2"):
        text = re.sub(r"\{#.*?#\}", "", path.read_text(encoding="utf-8"), flags=re.S)
        assigned |= _assigned_names(re.sub(r"\{[{%].*?[}%]\}", "", text))
    assigned -= {"MASTER_ADDR", "MASTER_PORT"}  # derived variables: refused by their own table
    assert assigned, "the pattern found no assignments at all"
    assert assigned <= SCRIPT_VARIABLES, f"add to extras.SCRIPT_VARIABLES: {sorted(assigned - SCRIPT_VARIABLES)}"
