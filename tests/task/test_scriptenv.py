"""What a script's task exports before the script runs (orchestrator/task/scriptenv.py), per launch style:
torchrun's variables for env and local-rank-arg, the node's launcher's for per-node (no rank of its own),
Slurm's task variables made the rank's for slurm."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from orchestrator.env.distenv import DistEnv
from orchestrator.spec.launch import Launch
from orchestrator.spec.runconfig import RunConfig
from orchestrator.spec.script import ScriptTarget
from orchestrator.task.scriptenv import export_script_environment

ENV = DistEnv(rank=3, local_rank=1, world_size=4, local_world_size=2, node_rank=1, num_nodes=2,
              master_addr="node1", master_port=31000)


def _exported(tmp_path: Path, style: str, procs: int = 1, mode: str = "slurm", gpus: int = 0,
              **environ: str) -> dict[str, str]:
    script = ScriptTarget(kind="script", target="/src/train.py", cwd="/src",
                          launch=Launch(style=style, procs_per_task=procs))  # type: ignore[arg-type]
    cfg = RunConfig(mode=mode, job_name="t", job_file="/src/train.py", params={}, nodes=2, gpus_per_node=gpus,
                    tasks_per_node=2, cpus_per_task=1, job_dir=str(tmp_path), created="2026-11-28T00:00:00+00:00",
                    script=script)
    out: Any = dict(environ)  # export_script_environment writes into the mapping it is given
    export_script_environment(cfg, ENV, tmp_path, out)
    return dict(out)


@pytest.mark.parametrize("style", ["env", "local-rank-arg"])
def test_torchrun_styles_get_torchruns_variables(tmp_path: Path, style: str) -> None:
    env = _exported(tmp_path, style, NODE_RANK="7", SLURM_PROCID="3")
    assert (env["RANK"], env["LOCAL_RANK"], env["WORLD_SIZE"], env["GROUP_RANK"]) == ("3", "1", "4", "1")
    assert "NODE_RANK" not in env and env["ORCH_JOB_DIR"] == str(tmp_path)


def test_per_node_gets_the_nodes_launchers_variables(tmp_path: Path) -> None:
    env = _exported(tmp_path, "per-node", procs=8)
    assert {k: env[k] for k in ("MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "NNODES", "NPROC_PER_NODE",
                                "WORLD_SIZE")} == {"MASTER_ADDR": "node1", "MASTER_PORT": "31000", "NODE_RANK": "1",
                                                   "NNODES": "2", "NPROC_PER_NODE": "8", "WORLD_SIZE": "16"}
    assert not {"RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "TORCHELASTIC_USE_AGENT_STORE",
                "TORCHELASTIC_ERROR_FILE"} & set(env)
    assert env["TORCHELASTIC_RESTART_COUNT"] == "0"  # a requeue's count still reaches it


def test_slurm_style_gets_the_ranks_slurm_variables(tmp_path: Path) -> None:
    env = _exported(tmp_path, "slurm", SLURM_NTASKS="6", SLURM_NNODES="3")  # the allocation's, with a spare
    assert (env["SLURM_PROCID"], env["SLURM_LOCALID"], env["SLURM_NODEID"]) == ("3", "1", "1")
    assert (env["SLURM_NTASKS"], env["SLURM_NNODES"], env["RANK"]) == ("4", "2", "3")


def test_nothing_is_exported_into_the_real_environment(tmp_path: Path) -> None:
    before = dict(os.environ)
    _exported(tmp_path, "slurm")
    assert dict(os.environ) == before


ACCELERATE_CPU = {"ACCELERATE_USE_CPU": "True", "KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "1"}


@pytest.mark.parametrize(("mode", "gpus", "environ"), [
    ("slurm", 0, {}),  # a Slurm job without GPUs
    ("local", 0, {"CUDA_VISIBLE_DEVICES": ""}),  # orch run --cpu
])
def test_a_rank_without_a_gpu_gets_what_accelerate_launch_cpu_sets(tmp_path: Path, mode: str, gpus: int,
                                                                   environ: dict[str, str]) -> None:
    env = _exported(tmp_path, "env", mode=mode, gpus=gpus, **environ)
    assert {k: env[k] for k in ACCELERATE_CPU} == ACCELERATE_CPU


def test_a_rank_with_a_gpu_gets_no_cpu_variables_and_the_users_own_win(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    driver = tmp_path / "nvidiactl"
    monkeypatch.setattr("orchestrator.env.devices.NVIDIA_DEVICE", driver)
    driver.touch()
    env = _exported(tmp_path, "env", mode="slurm", gpus=2, CUDA_VISIBLE_DEVICES="0,1")
    assert not set(ACCELERATE_CPU) & set(env)
    driver.unlink()  # Slurm's GPUs without a driver (a node that announces GPUs it lacks): a CPU rank
    env = _exported(tmp_path, "env", mode="slurm", gpus=2, CUDA_VISIBLE_DEVICES="0,1")
    assert {k: env[k] for k in ACCELERATE_CPU} == ACCELERATE_CPU
    env = _exported(tmp_path, "env", ACCELERATE_USE_CPU="false", KMP_BLOCKTIME="0")
    assert (env["ACCELERATE_USE_CPU"], env["KMP_BLOCKTIME"]) == ("false", "0")


def test_each_rank_gets_its_own_torchelastic_error_file_and_an_old_one_is_removed(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    old = tmp_path / "logs" / "rank3.error.json"
    old.write_text('{"message": "an earlier run\'s"}')
    env = _exported(tmp_path, "env")
    assert env["TORCHELASTIC_ERROR_FILE"] == str(old) and not old.exists()
