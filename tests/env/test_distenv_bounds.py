"""Slurm variables with thousands of digits or ranges are a clear error (with a hint) in ``distenv.derive``.
"""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(("variable", "value"), [
    ("SLURM_JOB_NODELIST", "n[" + ",".join(["1-65536"] * 600) + "]"),
    ("SLURM_JOB_NODELIST", "n[1-" + "9" * 5000 + "]"),
    ("SLURM_JOB_NUM_NODES", "9" * 5000),
    ("SLURM_PROCID", "1" * 4400),
    ("SLURM_TASKS_PER_NODE", "2(x" + "9" * 5000 + ")"),
])
def test_huge_slurm_variables_are_a_clear_error(variable: str, value: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from orchestrator.env import distenv
    from orchestrator.errors import OrchError

    environ = {"SLURM_JOB_ID": "7", "SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_NODEID": "0",
               "SLURM_NTASKS": "2", "SLURM_JOB_NUM_NODES": "1", "SLURM_JOB_NODELIST": "n1",
               "SLURM_TASKS_PER_NODE": "2", "SLURMD_NODENAME": "n1", "SLURM_STEP_NODELIST": "n1",
               "SLURM_STEP_NUM_NODES": "1", "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_TASKS_PER_NODE": "2",
               "MASTER_ADDR": "n1", "MASTER_PORT": "29500", variable: value}
    with pytest.raises(OrchError) as info:
        distenv.derive(environ)
    assert info.value.hint
