"""The frameworks' layout against orch's (orchestrator/spec/framework.py): the environment Lightning/Fabric detect
among the variables of each launch style, and which Trainer/Fabric layouts can match which ranks (pure)."""

from __future__ import annotations

import pytest

from orchestrator.errors import ConfigError
from orchestrator.spec.framework import (
    Framework,
    Layout,
    check_layout,
    devices_per_node,
    lightning_environment,
    rank_variables,
    with_environment,
)


@pytest.mark.parametrize(("style", "srun", "job", "environment"), [
    ("env", True, "train", "TorchElasticEnvironment"), ("slurm", False, None, "TorchElasticEnvironment"),
    ("per-node", True, "train", "SLURMEnvironment"), ("per-node", True, "bash", "LightningEnvironment"),
    ("per-node", False, None, "LightningEnvironment"), ("local-rank-arg", False, None, "TorchElasticEnvironment")])
def test_the_environment_lightning_detects(style: str, srun: bool, job: str | None, environment: str) -> None:
    assert lightning_environment(rank_variables(style, srun=srun), job) == environment


def test_lsf_needs_all_its_variables() -> None:
    names = {"LSB_JOBID", "LSB_DJOB_RANKFILE", "JSM_NAMESPACE_LOCAL_RANK"}
    assert lightning_environment(names, None) == "LightningEnvironment"
    assert lightning_environment({*names, "JSM_NAMESPACE_SIZE"}, None) == "LSFEnvironment"


def test_accelerate_reads_torchruns_variables_unless_per_node() -> None:
    fw = [Framework(name="accelerate", why="t.py:1"), Framework(name="hydra", why="t.py:2")]
    assert [f.environment for f in with_environment(fw, style="env", srun=False, job_name=None)] == [
        "torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE)", ""]
    assert with_environment(fw, style="per-node", srun=True, job_name="x")[0].environment == (
        "no rank variables (one process)")


@pytest.mark.parametrize(("layout", "gpus", "per_task", "cpu_only", "per_node"), [
    (Layout(where="w", devices=4), 8, 1, False, 4), (Layout(where="w"), 8, 1, False, 8),
    (Layout(where="w"), 8, 2, False, None), (Layout(where="w", accelerator="cpu"), 8, 1, False, 1),
    (Layout(where="w"), 0, 1, True, 1), (Layout(where="w"), 0, 1, False, None),
    (Layout(where="w", devices=None), 8, 1, False, None), (Layout(where="w", accelerator="gpu"), 0, 1, True, None)])
def test_devices_per_node(layout: Layout, gpus: int, per_task: int, cpu_only: bool, per_node: int | None) -> None:
    assert devices_per_node(layout, gpus=gpus, per_task=per_task, cpu_only=cpu_only) == per_node


def _check(layout: Layout, *, nodes: int = 2, tasks: int = 8, gpus: int = 8, per_task: int = 1,
           style: str = "env", name: str = "lightning") -> None:
    check_layout([Framework(name=name, why="w", layouts=[layout])], style=style, nodes=nodes,  # type: ignore[arg-type]
                 tasks_per_node=tasks, gpus=gpus, per_task=per_task, command="orch submit")


def test_a_matching_layout_passes() -> None:
    _check(Layout(where="w", num_nodes=2))  # devices auto: the node's 8 GPUs
    _check(Layout(where="w", devices=4, num_nodes=2), tasks=4, gpus=8, per_task=2)
    _check(Layout(where="w", devices=None, num_nodes=None))  # not literals: not judged
    _check(Layout(where="w", devices=1, strategy="ddp_spawn"), style="per-node")  # its task is not a rank


def test_the_hint_names_the_options_that_match() -> None:
    with pytest.raises(ConfigError) as exc:
        _check(Layout(where="w", devices=2, num_nodes=3), tasks=4, gpus=8, per_task=2)
    assert exc.value.hint == "submit it with --nodes 3 --gpus 4, or change the script: Trainer(devices=4, num_nodes=2)"
    with pytest.raises(ConfigError) as exc:
        _check(Layout(where="w", devices=2), nodes=1, tasks=4, gpus=0, name="fabric")
    assert exc.value.hint == ("submit it with --nodes 1 --ntasks-per-node 2, or change the script: "
                              "Fabric(devices=4, num_nodes=1)")
