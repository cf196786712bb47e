"""DistEnv derivation from real Slurm 22.05 task environments, torchrun environments and broken ones."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from orchestrator.env.distenv import DistEnv, derive, job_master_port, parse_tasks_per_node
from orchestrator.env.masterport import DEFAULT_PORT_RANGE, master_port
from orchestrator.env.taskenv import simulate_slurm_task_envs
from orchestrator.errors import ConfigError, DistEnvError

# Rank 3 of `sbatch -N2 --ntasks-per-node=2 --gpus-per-node=2` + `srun`, Slurm 22.05 (read off a real allocation).
RANK3_SAMPLE = (
    "SLURM_JOB_ID=1 SLURM_JOB_NODELIST=node[1-2] SLURM_JOB_NUM_NODES=2 SLURM_NNODES=2 SLURM_NODEID=1 "
    "SLURM_LOCALID=1 SLURM_PROCID=3 SLURM_NTASKS=4 SLURM_NTASKS_PER_NODE=2 SLURM_TASKS_PER_NODE=2(x2) "
    "SLURM_STEP_NODELIST=node[1-2] SLURM_STEP_NUM_NODES=2 SLURM_STEP_NUM_TASKS=4 "
    "SLURM_STEP_TASKS_PER_NODE=2(x2) SLURM_STEP_ID=0 SLURM_GTIDS=2,3 SLURMD_NODENAME=node2 "
    "CUDA_VISIBLE_DEVICES=0,1 SLURM_STEP_GPUS=0,1 SLURM_JOB_GPUS=0,1 SLURM_GPUS_ON_NODE=2"
)


def parse_env(text: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in text.split())


def real_task_env(rank: int) -> dict[str, str]:
    """The sample with the per-task values of ``rank`` (block distribution: 2 tasks per node)."""
    node = rank // 2
    env = parse_env(RANK3_SAMPLE)
    env.update(SLURM_PROCID=str(rank), SLURM_LOCALID=str(rank % 2), SLURM_NODEID=str(node),
               SLURMD_NODENAME=f"node{node + 1}", SLURM_GTIDS=f"{2 * node},{2 * node + 1}")
    return env


# The batch script of the same job: no SLURM_STEP_* at all, and PROCID 0 although NTASKS=4.
BATCH_STEP = parse_env(
    "SLURM_JOB_ID=1 SLURM_JOB_NODELIST=node[1-2] SLURM_JOB_NUM_NODES=2 SLURM_NNODES=2 SLURM_NODEID=0 "
    "SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NTASKS=4 SLURM_NTASKS_PER_NODE=2 SLURM_TASKS_PER_NODE=2(x2) "
    "SLURM_GTIDS=0 SLURMD_NODENAME=node1 CUDA_VISIBLE_DEVICES=0,1 SLURM_JOB_GPUS=0,1 SLURM_GPUS_ON_NODE=2"
)


@pytest.mark.parametrize("rank", [0, 1, 2, 3])
def test_all_four_ranks_of_the_real_2x2_environment(rank: int) -> None:
    dist = derive(real_task_env(rank))
    assert dist.as_dict() == {
        "rank": rank, "local_rank": rank % 2, "world_size": 4, "local_world_size": 2,
        "node_rank": rank // 2, "num_nodes": 2,
        "master_addr": "node1",  # first host of SLURM_STEP_NODELIST
        "master_port": 20001,  # 20000 + job 1 (restart 0) in the default range 20000-32767
    }


def test_the_sample_itself_is_rank_3() -> None:
    assert derive(parse_env(RANK3_SAMPLE)) == derive(real_task_env(3))


def test_as_dict_and_torch_env_keys() -> None:
    dist = derive(real_task_env(2))
    assert list(dist.as_dict()) == ["rank", "local_rank", "world_size", "local_world_size",
                                    "node_rank", "num_nodes", "master_addr", "master_port"]
    assert dist.torch_env() == {
        "RANK": "2", "LOCAL_RANK": "0", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2", "NODE_RANK": "1",
        "GROUP_RANK": "1", "GROUP_WORLD_SIZE": "2", "MASTER_ADDR": "node1", "MASTER_PORT": "20001",
    }
    with pytest.raises(AttributeError):
        dist.rank = 5  # type: ignore[misc]


def test_torch_env_round_trips_through_derive() -> None:
    for rank in range(4):
        dist = derive(real_task_env(rank))
        assert derive(dist.torch_env()) == dist


@pytest.mark.parametrize("step_id", [None, "batch", "extern", "4294967294"])
def test_batch_step_is_refused_with_run_under_srun(step_id: str | None) -> None:
    env = dict(BATCH_STEP)
    if step_id is not None:
        env["SLURM_STEP_ID"] = step_id
    with pytest.raises(DistEnvError) as info:
        derive(env)
    assert "inside Slurm job 1 but not in an srun step" in info.value.message
    assert info.value.hint is not None and "run this under srun" in info.value.hint


def test_outside_slurm_and_torchrun() -> None:
    with pytest.raises(DistEnvError) as info:
        derive({"HOME": "/root", "PATH": "/bin"})
    assert "not launched by srun or torchrun" in info.value.message
    assert info.value.hint is not None and "orch run" in info.value.hint and "srun" in info.value.hint
    with pytest.raises(DistEnvError, match=r"WORLD_SIZE set, but not RANK"):
        derive({"WORLD_SIZE": "4"})


TORCHRUN = {"RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1",
            "MASTER_ADDR": "10.0.0.7", "MASTER_PORT": "29400", "TORCHELASTIC_RUN_ID": "none"}


def test_torchrun_environment() -> None:
    assert derive(TORCHRUN) == DistEnv(rank=5, local_rank=1, world_size=8, local_world_size=4,
                                       node_rank=1, num_nodes=2, master_addr="10.0.0.7", master_port=29400)
    no_group = {k: v for k, v in TORCHRUN.items() if k != "GROUP_RANK"}
    assert derive(no_group).node_rank == 1  # RANK // LOCAL_WORLD_SIZE
    assert derive({**no_group, "NODE_RANK": "1"}).node_rank == 1
    assert derive({**TORCHRUN, "GROUP_WORLD_SIZE": "3", "WORLD_SIZE": "10"}).num_nodes == 3


def test_launcher_variables_win_over_slurm() -> None:
    # torchrun started by srun (one torchrun per node): torchrun's ranks, not Slurm's
    env = {**real_task_env(1), **TORCHRUN}
    dist = derive(env)
    assert (dist.rank, dist.world_size, dist.local_world_size) == (5, 8, 4)
    assert (dist.master_addr, dist.master_port) == ("10.0.0.7", 29400)


def test_master_from_environment_wins() -> None:
    env = {**real_task_env(3), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "31337"}
    dist = derive(env)
    assert (dist.master_addr, dist.master_port) == ("127.0.0.1", 31337)
    assert derive({**real_task_env(3), "MASTER_ADDR": "10.1.1.1"}).master_port == 20001


def test_step_variables_win_over_job_variables() -> None:
    # job on node[1-4] x 2 tasks; this step runs 1 task on each of node[3-4]
    env = parse_env(
        "SLURM_JOB_ID=77 SLURM_JOB_NODELIST=node[1-4] SLURM_NODELIST=node[1-4] SLURM_JOB_NUM_NODES=4 "
        "SLURM_NNODES=4 SLURM_NTASKS=8 SLURM_TASKS_PER_NODE=2(x4) SLURM_STEP_ID=3 "
        "SLURM_STEP_NODELIST=node[3-4] SLURM_STEP_NUM_NODES=2 SLURM_STEP_NUM_TASKS=2 "
        "SLURM_STEP_TASKS_PER_NODE=1(x2) SLURM_PROCID=1 SLURM_LOCALID=0 SLURM_NODEID=1 "
        "SLURMD_NODENAME=node4 SLURM_GTIDS=1")
    dist = derive(env)
    assert dist.as_dict() == {"rank": 1, "local_rank": 0, "world_size": 2, "local_world_size": 1,
                              "node_rank": 1, "num_nodes": 2, "master_addr": "node3",
                              "master_port": master_port("77", 0, DEFAULT_PORT_RANGE)}


def test_job_variables_are_the_fallback() -> None:
    env = real_task_env(3)
    for name in ("SLURM_STEP_NODELIST", "SLURM_STEP_NUM_NODES", "SLURM_STEP_NUM_TASKS",
                 "SLURM_STEP_TASKS_PER_NODE"):
        del env[name]
    assert derive(env) == derive(real_task_env(3))


def test_uneven_tasks_per_node() -> None:
    # srun -n10 over 5 nodes as Slurm lays it out: 3,2(x3),1
    env = parse_env(
        "SLURM_JOB_ID=9 SLURM_STEP_ID=0 SLURM_STEP_NODELIST=n[1-5] SLURM_STEP_NUM_NODES=5 "
        "SLURM_STEP_NUM_TASKS=10 SLURM_STEP_TASKS_PER_NODE=3,2(x3),1 SLURM_PROCID=9 SLURM_LOCALID=0 "
        "SLURM_NODEID=4 SLURMD_NODENAME=n5 SLURM_GTIDS=9")
    dist = derive(env)
    assert (dist.local_world_size, dist.node_rank, dist.num_nodes, dist.world_size) == (1, 4, 5, 10)
    assert derive(dist.torch_env()) == dist  # GROUP_WORLD_SIZE carries the node count
    with pytest.raises(DistEnvError, match=r"SLURM_LOCALID=1 is out of range"):
        derive({**env, "SLURM_LOCALID": "1"})


# (changes to rank 3's environment, fragment of the message); None deletes the variable
BROKEN: list[tuple[dict[str, str | None], str]] = [
    ({"SLURM_PROCID": "4"}, "SLURM_PROCID=4 is out of range: SLURM_STEP_NUM_TASKS is 4"),
    ({"SLURM_LOCALID": "2"}, "SLURM_LOCALID=2 is out of range"),
    ({"SLURM_NODEID": "2"}, "SLURM_NODEID=2 is out of range: SLURM_STEP_NUM_NODES is 2"),
    ({"SLURM_STEP_NUM_TASKS": "5"}, "SLURM_STEP_TASKS_PER_NODE=2(x2) adds up to 4 tasks but "
                                    "SLURM_STEP_NUM_TASKS=5"),
    ({"SLURM_STEP_NUM_NODES": "3"}, "SLURM_STEP_NUM_NODES=3 but SLURM_STEP_NODELIST=node[1-2] has 2 hosts"),
    ({"SLURM_STEP_TASKS_PER_NODE": "2(x3)"}, "SLURM_STEP_TASKS_PER_NODE=2(x3) lists 3 nodes"),
    ({"SLURM_STEP_TASKS_PER_NODE": "2(y2)"}, "'2(y2)' is not N or N(xK)"),
    ({"SLURM_STEP_TASKS_PER_NODE": "0(x2)"}, "has a zero count"),
    ({"SLURMD_NODENAME": "node1"}, "SLURMD_NODENAME=node1 but node 1 (SLURM_NODEID)"),
    ({"SLURM_GTIDS": "0,1"}, "SLURM_GTIDS=0,1"),
    ({"SLURM_PROCID": "three"}, "SLURM_PROCID='three' is not a non-negative integer"),
    ({"SLURM_PROCID": "-1"}, "SLURM_PROCID='-1' is not a non-negative integer"),
    ({"SLURM_STEP_NUM_NODES": ""}, "SLURM_STEP_NUM_NODES='' is not a non-negative integer"),
    ({"SLURM_STEP_NODELIST": "node[2-1]"}, "SLURM_STEP_NODELIST: invalid hostlist 'node[2-1]'"),
    ({"SLURM_PROCID": None}, "SLURM_PROCID is not set"),
    ({"SLURM_LOCALID": None}, "SLURM_LOCALID is not set"),
    ({"SLURM_NODEID": None}, "SLURM_NODEID is not set"),
    ({"SLURM_STEP_NODELIST": None, "SLURM_JOB_NODELIST": None},
     "SLURM_STEP_NODELIST or SLURM_JOB_NODELIST or SLURM_NODELIST is not set"),
    ({"SLURM_STEP_NUM_TASKS": None, "SLURM_NTASKS": None}, "SLURM_STEP_NUM_TASKS or SLURM_NTASKS"),
    ({"MASTER_PORT": "70000"}, "MASTER_PORT=70000 is not a TCP port"),
    ({"MASTER_PORT": "http"}, "MASTER_PORT='http' is not a non-negative integer"),
    ({"SLURM_RESTART_COUNT": "x"}, "SLURM_RESTART_COUNT='x'"),
]


@pytest.mark.parametrize(("changes", "fragment"), BROKEN)
def test_inconsistent_or_missing_variables(changes: dict[str, str | None], fragment: str) -> None:
    env = real_task_env(3)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    with pytest.raises(DistEnvError) as info:
        derive(env)
    assert fragment in info.value.message
    assert info.value.hint


@pytest.mark.parametrize(("changes", "fragment"), [
    ({"LOCAL_RANK": None}, "LOCAL_RANK is not set"),
    ({"WORLD_SIZE": None}, "WORLD_SIZE is not set"),
    ({"LOCAL_WORLD_SIZE": None}, "LOCAL_WORLD_SIZE is not set"),
    ({"RANK": "8"}, "RANK=8 is out of range: WORLD_SIZE is 8"),
    ({"LOCAL_RANK": "4"}, "LOCAL_RANK=4 is out of range"),
    ({"GROUP_RANK": "2"}, "GROUP_RANK=2 is out of range"),
    ({"WORLD_SIZE": "0"}, "must be >= 1"),
    ({"WORLD_SIZE": "2", "RANK": "1", "GROUP_RANK": "0"}, "LOCAL_WORLD_SIZE=4 is larger than WORLD_SIZE=2"),
    ({"WORLD_SIZE": "10", "GROUP_RANK": None}, "not a multiple of LOCAL_WORLD_SIZE"),
    ({"MASTER_ADDR": None}, "MASTER_ADDR is not set"),
    ({"MASTER_PORT": None}, "MASTER_PORT is not set"),
])
def test_broken_torchrun_environments(changes: dict[str, str | None], fragment: str) -> None:
    env: dict[str, str] = dict(TORCHRUN)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    with pytest.raises(DistEnvError) as info:
        derive(env)
    assert fragment in info.value.message
    assert info.value.hint


def test_derive_reads_only_the_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "7")
    monkeypatch.setenv("MASTER_PORT", "1234")
    assert derive(real_task_env(0)).rank == 0
    assert derive(real_task_env(0)).master_port == 20001


@pytest.mark.parametrize(("text", "expected"), [
    ("2(x2)", [2, 2]), ("3,2(x3),1", [3, 2, 2, 2, 1]), ("8", [8]), ("1,1", [1, 1]), ("4(x1)", [4]),
    (" 2(x2) ", [2, 2]),
])
def test_parse_tasks_per_node(text: str, expected: list[int]) -> None:
    assert parse_tasks_per_node(text) == expected


def test_parse_tasks_per_node_large_and_invalid() -> None:
    assert parse_tasks_per_node("8(x1024)") == [8] * 1024
    for bad in ("", "x", "2x2", "2(x)", "2(x0)", "0", "2,,1", "-1"):
        with pytest.raises(DistEnvError, match="SLURM_TASKS_PER_NODE"):
            parse_tasks_per_node(bad)


# low + (n + restarts * K) % span, worked out by hand: span 100 -> K 63 (round(61.8) = 62 shares 2 with
# 100); span 10,000 -> K 6181; "123_4" counts as 127, "123+1" as 124, "abc" as crc32(b"abc") = 891568578.
@pytest.mark.parametrize(("job", "restarts", "port_range", "port"), [
    ("1", 0, (20000, 20099), 20001),
    (1, 0, (20000, 20099), 20001),
    ("1", 1, (20000, 20099), 20064),
    ("1", 7, (20000, 20099), 20042),
    ("12345", 0, (20000, 20099), 20045),
    ("999999999", 7, (20000, 20099), 20040),
    ("123_4", 0, (20000, 20099), 20027),
    ("123+1", 0, (20000, 20099), 20024),
    ("abc", 0, (20000, 20099), 20078),
    (42, 1, (20000, 20099), 20005),
    (" 42 ", 1, (20000, 20099), 20005),
    ("1", 0, DEFAULT_PORT_RANGE, 20001),
    ("1", 1, DEFAULT_PORT_RANGE, 27892),
    ("12345", 2, DEFAULT_PORT_RANGE, 22591),
    ("5", 3, (4000, 4000), 4000),
    ("0", 0, (65535, 65535), 65535),
    ("7", 0, (1, 10), 8),
])
def test_master_port_is_deterministic_and_in_range(job: str | int, restarts: int, port_range: tuple[int, int],
                                                   port: int) -> None:
    assert master_port(job, restarts, port_range) == port


def test_master_port_is_equal_in_every_process() -> None:
    """A fresh interpreter with another hash seed computes the same ports (no salted hash())."""
    code = ("from orchestrator.env.masterport import master_port as m;"
            "print(m('job-alpha', 2, (29500, 39499)), m('123_4', 0, (29500, 39499)))")
    outs = set()
    for seed in ("1", "2", "random"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                check=True).stdout)
    expected = f"{master_port('job-alpha', 2, (29500, 39499))} {master_port('123_4', 0, (29500, 39499))}\n"
    assert outs == {expected}


@pytest.mark.parametrize("start", [0, 1, 12345, 1_000_000_007])
def test_jobs_closer_than_the_span_never_share_a_port(start: int) -> None:
    low, high = DEFAULT_PORT_RANGE
    span = high - low + 1
    for restart in (0, 1):
        ports = {master_port(str(job), restart, DEFAULT_PORT_RANGE) for job in range(start, start + span)}
        assert len(ports) == span


def test_a_requeued_job_moves_away_from_its_neighbours() -> None:
    span = DEFAULT_PORT_RANGE[1] - DEFAULT_PORT_RANGE[0] + 1
    job = 50_000
    neighbours = {master_port(str(job + d), 0, DEFAULT_PORT_RANGE) for d in range(-span // 8, span // 8)}
    for restart in (1, 2, 3):
        assert master_port(str(job), restart, DEFAULT_PORT_RANGE) not in neighbours


def test_job_master_port_in_the_batch_script() -> None:
    # the batch script computes the port the tasks would derive themselves
    assert job_master_port(BATCH_STEP) == derive(real_task_env(0)).master_port == 20001
    assert job_master_port({**BATCH_STEP, "SLURM_RESTART_COUNT": "2"}, (1000, 1999)) == master_port(
        "1", 2, (1000, 1999))
    with pytest.raises(DistEnvError, match="SLURM_JOB_ID or SLURM_JOBID is not set"):
        job_master_port({})
    with pytest.raises(DistEnvError, match="SLURM_RESTART_COUNT='two'"):
        job_master_port({**BATCH_STEP, "SLURM_RESTART_COUNT": "two"})


def test_restart_count_unset_means_zero() -> None:
    env = real_task_env(0)
    assert derive(env).master_port == derive({**env, "SLURM_RESTART_COUNT": "0"}).master_port
    assert derive({**env, "SLURM_RESTART_COUNT": "1"}).master_port == master_port("1", 1, DEFAULT_PORT_RANGE)
    assert derive({**env, "SLURM_RESTART_COUNT": "1"}).master_port != derive(env).master_port


def test_array_and_odd_job_ids() -> None:
    assert master_port("123_4", 0, DEFAULT_PORT_RANGE) != master_port("123_5", 0, DEFAULT_PORT_RANGE)
    assert master_port("abc", 0, DEFAULT_PORT_RANGE) != master_port("abd", 0, DEFAULT_PORT_RANGE)
    with pytest.raises(DistEnvError, match="job id is empty"):
        master_port(" ", 0, DEFAULT_PORT_RANGE)
    with pytest.raises(DistEnvError, match="restart count"):
        master_port("1", -1, DEFAULT_PORT_RANGE)
    with pytest.raises(ConfigError, match="port range 40000-30000 is invalid"):
        master_port("1", 0, (40000, 30000))


@pytest.mark.parametrize(("nodes", "tasks"), [(1, 1), (1, 8), (2, 8), (3, 2), (1024, 8)])
def test_simulated_allocation_round_trips_through_derive(nodes: int, tasks: int) -> None:
    hosts = [f"gpu{i:04d}" for i in range(1, nodes + 1)]
    envs = list(simulate_slurm_task_envs(hosts, tasks, "4242", tasks, hosts[0], 31234))
    assert len(envs) == nodes * tasks
    for rank, env in enumerate(envs):
        dist = derive(env)
        assert dist == DistEnv(rank=rank, local_rank=rank % tasks, world_size=nodes * tasks,
                               local_world_size=tasks, node_rank=rank // tasks, num_nodes=nodes,
                               master_addr="gpu0001", master_port=31234)
        assert env["SLURMD_NODENAME"] == hosts[rank // tasks]
    last = envs[-1]
    assert last["SLURM_PROCID"] == str(nodes * tasks - 1)
    assert last["SLURM_TASKS_PER_NODE"] == (f"{tasks}(x{nodes})" if nodes > 1 else str(tasks))
    assert last["CUDA_VISIBLE_DEVICES"] == ",".join(str(g) for g in range(tasks))


def test_simulated_1024x8_spot_checks() -> None:
    hosts = [f"node{i}" for i in range(1, 1025)]
    envs = list(simulate_slurm_task_envs(hosts, 8, "900", 8, "node1", 29900))
    assert envs[0]["SLURM_JOB_NODELIST"] == "node[1-1024]"
    assert envs[8 * 513 + 5]["SLURM_GTIDS"] == ",".join(str(8 * 513 + i) for i in range(8))
    dist = derive(envs[8 * 513 + 5])
    assert (dist.rank, dist.local_rank, dist.node_rank, dist.num_nodes) == (4109, 5, 513, 1024)


def test_simulation_reproduces_the_real_sample() -> None:
    envs = list(simulate_slurm_task_envs(["node1", "node2"], 2, "1", 2, "node1", 29501))
    sample = parse_env(RANK3_SAMPLE)
    assert {k: envs[3][k] for k in sample} == sample
    for rank in range(4):
        assert {k: envs[rank][k] for k in sample} == real_task_env(rank)
    assert envs[0]["MASTER_ADDR"] == "node1" and envs[0]["MASTER_PORT"] == "29501"


def test_simulation_without_gpus_and_bad_input() -> None:
    env = next(simulate_slurm_task_envs(["c1"], 1, "5", 0, "c1", 30000))
    assert "CUDA_VISIBLE_DEVICES" not in env and "SLURM_JOB_GPUS" not in env
    assert derive(env).world_size == 1
    with pytest.raises(ConfigError, match="without hosts"):
        list(simulate_slurm_task_envs([], 1, "5", 0, "c1", 30000))
    with pytest.raises(ConfigError, match="tasks_per_node=0"):
        list(simulate_slurm_task_envs(["c1"], 0, "5", 0, "c1", 30000))


# Captured from a real `sbatch -N2 --ntasks-per-node=2 --gpus-per-node=2` job (Slurm 22.05.8, the
# test cluster of tests/slurm/cluster.sh), `srun env` of rank 2: every variable the simulation
# emits, plus a few it does not. Also from that job: the batch script saw SLURM_PROCID=0,
# SLURM_NODEID=0, SLURM_GTIDS=0 and no SLURM_STEP_*, and derive() there raised "run this under srun".
REAL_JOB7_RANK2 = parse_env(
    "CUDA_VISIBLE_DEVICES=0,1 GPU_DEVICE_ORDINAL=0,1 ROCR_VISIBLE_DEVICES=0,1 SLURMD_NODENAME=node2 "
    "SLURM_GPUS_ON_NODE=2 SLURM_GPUS_PER_NODE=2 SLURM_GTIDS=2,3 SLURM_JOBID=7 SLURM_JOB_GPUS=0,1 "
    "SLURM_JOB_ID=7 SLURM_JOB_NODELIST=node[1-2] SLURM_JOB_NUM_NODES=2 SLURM_LOCALID=0 SLURM_NNODES=2 "
    "SLURM_NODEID=1 SLURM_NODELIST=node[1-2] SLURM_NPROCS=4 SLURM_NTASKS=4 SLURM_NTASKS_PER_NODE=2 "
    "SLURM_PROCID=2 SLURM_STEPID=0 SLURM_STEP_GPUS=0,1 SLURM_STEP_ID=0 SLURM_STEP_NODELIST=node[1-2] "
    "SLURM_STEP_NUM_NODES=2 SLURM_STEP_NUM_TASKS=4 SLURM_STEP_TASKS_PER_NODE=2(x2) "
    "SLURM_TASKS_PER_NODE=2(x2) SLURM_DISTRIBUTION=block SLURM_CPUS_ON_NODE=2 "
    "SLURM_JOB_CPUS_PER_NODE=2(x2) SLURM_TOPOLOGY_ADDR=node2 SLURM_TASK_PID=21036 "
    "SLURM_JOB_NAME=h1-envprobe SLURM_JOB_PARTITION=debug SLURM_CLUSTER_NAME=orch"
)


def test_simulation_equals_a_captured_real_task_environment() -> None:
    simulated = list(simulate_slurm_task_envs(["node1", "node2"], 2, "7", 2, "node1", 20007))[2]
    assert {k: v for k, v in simulated.items() if not k.startswith("MASTER_")} == {
        k: REAL_JOB7_RANK2[k] for k in simulated if not k.startswith("MASTER_")}
    assert derive(REAL_JOB7_RANK2) == derive(simulated) == DistEnv(
        rank=2, local_rank=0, world_size=4, local_world_size=2, node_rank=1, num_nodes=2,
        master_addr="node1", master_port=20007)
