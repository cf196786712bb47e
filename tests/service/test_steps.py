"""orch exec's service (orchestrator/service/steps.py) over plain values: the head node's address, the
environment a task derives its rank from, and the refusal outside a step. The whole step through the real CLI
(srun's tasks faked as local processes, gloo on CPU): tests/commands/test_exec_script.py."""

from __future__ import annotations

import pytest
from support import FakeSlurm

from orchestrator.errors import ConfigError
from orchestrator.service.steps import check_in_step, head_address, without_torchrun_vars


def test_master_addr_is_the_first_nodes_name_or_its_node_addr(fake_slurm: FakeSlurm) -> None:
    fake_slurm.set({"scontrol": {"stdout": "NodeName=nosuchnode1 Arch=x86_64 NodeAddr=127.0.0.9 NodeHostName=x\n"}})
    exported = {"SLURM_STEP_NODELIST": "nosuchnode1.invalid,nosuchnode2.invalid", "MASTER_ADDR": "10.1.2.3"}
    head_address(exported)
    assert exported["MASTER_ADDR"] == "10.1.2.3" and fake_slurm.calls() == []  # the batch script's own wins
    resolves = {"SLURM_STEP_NODELIST": "localhost", "SLURM_JOB_NODELIST": "elsewhere"}
    head_address(resolves)
    assert "MASTER_ADDR" not in resolves and fake_slurm.calls() == []  # derive() takes the name
    unknown = {"SLURM_STEP_NODELIST": "nosuchnode1.invalid,nosuchnode2.invalid"}
    head_address(unknown)
    assert unknown["MASTER_ADDR"] == "127.0.0.9"
    assert fake_slurm.calls() == [["scontrol", "show", "node", "nosuchnode1.invalid"]]


def test_a_torchrun_launchers_rank_variables_are_left_out() -> None:
    environ = {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "1",
               "NODE_RANK": "1", "GROUP_WORLD_SIZE": "4", "SLURM_PROCID": "0", "MASTER_PORT": "29500", "PATH": "/bin"}
    assert without_torchrun_vars(environ) == {"SLURM_PROCID": "0", "MASTER_PORT": "29500", "PATH": "/bin"}


def test_outside_a_step_the_task_is_refused() -> None:
    with pytest.raises(ConfigError, match="SLURM_JOB_ID is not set"):
        check_in_step({})
    with pytest.raises(ConfigError, match="not in an srun step"):
        check_in_step({"SLURM_JOB_ID": "12"})


def test_with_no_check_only_rank_0_reads_the_launch_style(monkeypatch: pytest.MonkeyPatch) -> None:
    """orch exec --no-check: the style is decided once per step, by rank 0 (into the job.json the others read);
    with the doctor on, every task reaches the doctor's verdict (the same refusal everywhere)."""
    import importlib
    from pathlib import Path

    from support import TESTS

    from orchestrator.service import steps
    from orchestrator.spec.script import ScriptTarget

    gate = importlib.import_module("orchestrator.doctor.gate")
    read: list[bool] = []
    real = gate.check_script
    monkeypatch.setattr(gate, "check_script", lambda *a, **k: read.append(k["refuse"]) or real(*a, **k))
    script = TESTS / "scripts" / "spawn_per_node.py"
    target = ScriptTarget(kind="script", target=str(script), cwd=str(Path.cwd()))
    assert steps._gate(target, steps.ExecRequest(no_check=True), None, 1, 2) is target and read == []
    assert steps._gate(target, steps.ExecRequest(no_check=True), None, 0, 2).launch.style == "per-node"
    assert read == [False]
    with pytest.raises(ConfigError):
        steps._gate(target, steps.ExecRequest(no_check=True, launch="sideways"), None, 1, 2)
