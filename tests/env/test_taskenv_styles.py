"""The variables of each launch style's task (orchestrator/env/taskenv.py): a slurm-style rank sees the
values srun gives its task, whatever the allocation around it; a per-node task gets the node's launcher's."""

from __future__ import annotations

import pytest

from orchestrator.env.distenv import SLURM_VARS, derive
from orchestrator.env.taskenv import STYLE_VARIABLES, simulate_slurm_task_envs, slurm_style_env
from orchestrator.spec.launch import STYLES

HOSTS = ["node1", "node2"]


@pytest.mark.parametrize("tasks", [1, 2, 4])
def test_slurm_style_gives_each_rank_what_srun_gives_its_task(tasks: int) -> None:
    for environ in simulate_slurm_task_envs(HOSTS, tasks, "77", 0, "node1", 31000):
        ours = slurm_style_env(derive(environ))
        assert {name: environ[name] for name in ours if name in environ} == {
            name: ours[name] for name in ours if name in environ}
        assert ours["SLURM_PROCID"] == environ["SLURM_PROCID"] and ours["SLURM_NTASKS"] == str(2 * tasks)


def test_slurm_style_corrects_the_allocations_figures() -> None:
    """A job with a spare node: the allocation's SLURM_NNODES/SLURM_JOB_NUM_NODES say 3, the step 2; a script
    reading SLURM_NNODES must see the step's 2 (and every name of distenv's table is set)."""
    [environ, *_] = simulate_slurm_task_envs(HOSTS, 2, "77", 0, "node1", 31000)
    environ = {**environ, "SLURM_NNODES": "3", "SLURM_JOB_NUM_NODES": "3", "SLURM_NTASKS": "6", "SLURM_NPROCS": "6"}
    ours = slurm_style_env(derive(environ))
    assert (ours["SLURM_NNODES"], ours["SLURM_JOB_NUM_NODES"], ours["SLURM_NTASKS"]) == ("2", "2", "4")
    for field in ("rank", "local_rank", "node_rank", "world_size", "num_nodes"):
        assert set(SLURM_VARS[field]) <= set(ours)


def test_per_node_task_has_no_rank_of_its_own() -> None:
    env = derive(next(iter(simulate_slurm_task_envs(HOSTS, 1, "77", 8, "node1", 31000))))
    dropped, added = STYLE_VARIABLES["per-node"](env, 8)
    assert {"RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK"} <= set(dropped)
    assert added == {"MASTER_ADDR": "node1", "MASTER_PORT": "31000", "NODE_RANK": "0", "NNODES": "2",
                     "NPROC_PER_NODE": "8", "WORLD_SIZE": "16"}


def test_every_style_has_a_row() -> None:
    assert set(STYLE_VARIABLES) == set(STYLES)
    env = derive(next(iter(simulate_slurm_task_envs(HOSTS, 1, "77", 0, "node1", 31000))))
    assert STYLE_VARIABLES["env"](env, 1) == STYLE_VARIABLES["local-rank-arg"](env, 1) == ((), {})
