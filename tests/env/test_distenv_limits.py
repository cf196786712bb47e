"""distenv at its edges: every limit at N and N+1, every variable's fallback order, every refusal."""

from __future__ import annotations

import pytest
from test_distenv import TORCHRUN, real_task_env

from orchestrator.env.distenv import DistEnv, derive, job_master_port, parse_tasks_per_node
from orchestrator.env.masterport import DEFAULT_PORT_RANGE, master_port
from orchestrator.env.taskenv import simulate_slurm_task_envs
from orchestrator.errors import ConfigError, DistEnvError

JOB1_PORT = 20001  # master_port("1", 0, DEFAULT_PORT_RANGE): 20000 + 1


def changed(base: dict[str, str], **changes: str | None) -> dict[str, str]:
    env = dict(base)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


# --- MASTER_PORT / MASTER_ADDR ---------------------------------------------------------------------

@pytest.mark.parametrize(("value", "port"), [
    ("1", 1), ("1024", 1024), ("65535", 65535), (" 31337 ", 31337), ("", JOB1_PORT), ("  ", JOB1_PORT),
])
def test_master_port_accepted(value: str, port: int) -> None:
    assert derive(changed(real_task_env(3), MASTER_PORT=value)).master_port == port


@pytest.mark.parametrize(("value", "fragment"), [
    ("0", "MASTER_PORT=0 is not a TCP port (1-65535)"),
    ("65536", "MASTER_PORT=65536 is not a TCP port (1-65535)"),
    ("-1", "MASTER_PORT='-1' is not a non-negative integer"),
    ("1e3", "MASTER_PORT='1e3' is not a non-negative integer"),
    ("٣", "MASTER_PORT='٣' is not a non-negative integer"),  # a non-ASCII digit
])
def test_master_port_refused(value: str, fragment: str) -> None:
    with pytest.raises(DistEnvError) as info:
        derive(changed(real_task_env(3), MASTER_PORT=value))
    assert fragment in info.value.message


def test_master_port_without_job_id_or_variable_is_refused() -> None:
    with pytest.raises(DistEnvError, match="MASTER_PORT is not set and there is no SLURM_JOB_ID"):
        derive(changed(TORCHRUN, MASTER_PORT=None))
    with pytest.raises(DistEnvError, match="MASTER_PORT is not set and there is no SLURM_JOB_ID"):
        derive(changed(TORCHRUN, MASTER_PORT=" "))


@pytest.mark.parametrize(("value", "addr"), [
    ("10.0.0.9", "10.0.0.9"), (" 10.0.0.9\t", "10.0.0.9"), ("", "node1"), ("   ", "node1"),
])
def test_master_addr_blank_falls_back_to_the_first_node(value: str, addr: str) -> None:
    assert derive(changed(real_task_env(2), MASTER_ADDR=value)).master_addr == addr


@pytest.mark.parametrize("value", ["", " ", "\t"])
def test_blank_master_addr_without_a_node_list_is_refused(value: str) -> None:
    with pytest.raises(DistEnvError, match="MASTER_ADDR is not set and there is no Slurm node list"):
        derive(changed(TORCHRUN, MASTER_ADDR=value))


def test_master_addr_from_each_node_list_variable_in_order() -> None:
    env = changed(TORCHRUN, MASTER_ADDR=None, SLURM_STEP_NODELIST="s[3-4]", SLURM_JOB_NODELIST="j[1-2]",
                  SLURM_NODELIST="n[5-6]")
    assert derive(env).master_addr == "s3"
    assert derive(changed(env, SLURM_STEP_NODELIST=None)).master_addr == "j1"
    assert derive(changed(env, SLURM_STEP_NODELIST=None, SLURM_JOB_NODELIST=None)).master_addr == "n5"
    with pytest.raises(DistEnvError, match="SLURM_STEP_NODELIST is empty"):
        derive(changed(env, SLURM_STEP_NODELIST=" "))
    with pytest.raises(DistEnvError, match="SLURM_STEP_NODELIST: invalid hostlist"):
        derive(changed(env, SLURM_STEP_NODELIST="s[4-3]"))


# --- SLURM_GTIDS ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("gtids", "ok"), [
    ("2,3", True), ("3,2", True), ("2,3,4", False), ("3", False), ("1,3", True), ("0,1", False),
    ("2,3,", False), ("", False),
])
def test_gtids_must_list_this_rank_among_the_nodes_tasks(gtids: str, ok: bool) -> None:
    env = changed(real_task_env(3), SLURM_GTIDS=gtids)
    if ok:
        assert derive(env).rank == 3
    else:
        with pytest.raises(DistEnvError, match="does not hold SLURM_PROCID=3 among 2 tasks"):
            derive(env)


def test_gtids_are_optional() -> None:
    assert derive(changed(real_task_env(3), SLURM_GTIDS=None)) == derive(real_task_env(3))


# --- which step is a task step ----------------------------------------------------------------------

@pytest.mark.parametrize("step", ["batch", "extern", "interactive", "4294967290", "4294967294", "4294967295",
                                  " batch "])
def test_every_non_task_step_is_refused(step: str) -> None:
    with pytest.raises(DistEnvError, match="not in an srun step"):
        derive(changed(real_task_env(3), SLURM_STEP_ID=step))


@pytest.mark.parametrize("step", ["0", "1", "4294967293"])
def test_task_steps_are_accepted(step: str) -> None:
    assert derive(changed(real_task_env(3), SLURM_STEP_ID=step)).rank == 3


def test_old_variable_spellings() -> None:
    env = real_task_env(3)
    old = changed(env, SLURM_JOB_ID=None, SLURM_JOBID="1", SLURM_STEP_ID=None, SLURM_STEPID="0")
    assert derive(old) == derive(env)
    with pytest.raises(DistEnvError, match="not in an srun step"):
        derive(changed(old, SLURM_STEPID="batch"))


# --- Slurm: fallbacks in order, limits at N-1 and N ------------------------------------------------

@pytest.mark.parametrize(("names", "values"), [
    (("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"), ("4", "6", "8")),
    (("SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES", "SLURM_NNODES"), ("2", "3", "4")),
    (("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"), ("2(x2)", "3(x2)")),
])
def test_each_slurm_value_falls_back_in_order(names: tuple[str, ...], values: tuple[str, ...]) -> None:
    """The first variable present wins: only the first value is consistent with the rest."""
    env = changed(real_task_env(3), **dict.fromkeys(["SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS",
                                                     "SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES",
                                                     "SLURM_NNODES", "SLURM_STEP_TASKS_PER_NODE",
                                                     "SLURM_TASKS_PER_NODE"]))
    base = {"SLURM_STEP_NUM_TASKS": "4", "SLURM_STEP_NUM_NODES": "2", "SLURM_STEP_TASKS_PER_NODE": "2(x2)"}
    for name, value in base.items():
        if name not in names:
            env[name] = value
    for i in range(len(names)):
        full = {**env, **dict(zip(names[i:], values, strict=False))}
        assert derive(full).world_size == 4  # the good value, first of those present
        if i + 1 < len(names):  # the good value in the wrong place is not read
            broken = {**env, **dict(zip(names[i:], values[1:] + values[:1], strict=False))}
            with pytest.raises(DistEnvError):
                derive(broken)


def test_node_list_falls_back_in_order() -> None:
    env = changed(real_task_env(3), SLURM_STEP_NODELIST="node[1-2]", SLURM_JOB_NODELIST="x[1-2]",
                  SLURM_NODELIST="y[1-2]")
    assert derive(env).master_addr == "node1"
    assert derive(changed(env, SLURM_STEP_NODELIST=None, SLURM_JOB_NODELIST="node[1-2]")).rank == 3
    assert derive(changed(env, SLURM_STEP_NODELIST=None, SLURM_JOB_NODELIST=None,
                          SLURM_NODELIST="node[1-2]")).master_addr == "node1"
    with pytest.raises(DistEnvError, match="SLURMD_NODENAME=node2 but node 1"):
        derive(changed(env, SLURM_STEP_NODELIST=None))  # x[1-2] is read, and node2 is not x2


@pytest.mark.parametrize(("changes", "ok"), [
    ({"SLURM_PROCID": "3"}, True),
    ({"SLURM_PROCID": "4"}, False),
    ({"SLURM_LOCALID": "1"}, True),
    ({"SLURM_LOCALID": "2"}, False),
    ({"SLURM_NODEID": "1"}, True),
    ({"SLURM_NODEID": "2", "SLURMD_NODENAME": None}, False),
    ({"SLURMD_NODENAME": "node2"}, True),
    ({"SLURMD_NODENAME": None}, True),
    ({"SLURMD_NODENAME": "node1"}, False),
    ({"SLURM_STEP_NUM_NODES": "2"}, True),
    ({"SLURM_STEP_NUM_NODES": "1"}, False),
    ({"SLURM_STEP_NUM_NODES": "3"}, False),
    ({"SLURM_STEP_NUM_TASKS": "3"}, False),
    ({"SLURM_STEP_NUM_TASKS": "5"}, False),
    ({"SLURM_STEP_TASKS_PER_NODE": "2,2"}, True),
    ({"SLURM_STEP_TASKS_PER_NODE": "3,1"}, False),   # adds up, but node 1 has one task: LOCALID 1 is out
    ({"SLURM_STEP_TASKS_PER_NODE": "1,3", "SLURM_STEP_NUM_TASKS": "4", "SLURM_GTIDS": "1,2,3"}, True),
    ({"SLURM_STEP_TASKS_PER_NODE": "2"}, False),
    ({"SLURM_STEP_TASKS_PER_NODE": "2(x3)"}, False),
    ({"SLURM_STEP_NODELIST": ""}, False),
])
def test_slurm_limits(changes: dict[str, str | None], ok: bool) -> None:
    env = changed(real_task_env(3), **changes)
    if ok:
        dist = derive(env)
        assert (dist.rank, dist.world_size, dist.num_nodes) == (int(env["SLURM_PROCID"]), 4, 2)
    else:
        with pytest.raises(DistEnvError):
            derive(env)


def test_local_world_size_is_this_nodes_entry() -> None:
    env = changed(real_task_env(3), SLURM_STEP_TASKS_PER_NODE="1,3", SLURM_GTIDS="1,2,3")
    assert derive(env).local_world_size == 3
    first = changed(real_task_env(0), SLURM_STEP_TASKS_PER_NODE="1,3", SLURM_GTIDS="0")
    assert derive(first).local_world_size == 1


# --- torchrun-style variables -----------------------------------------------------------------------

@pytest.mark.parametrize(("changes", "ok"), [
    ({"RANK": "7"}, True),
    ({"RANK": "8"}, False),
    ({"LOCAL_RANK": "3"}, True),
    ({"LOCAL_RANK": "4"}, False),
    ({"LOCAL_WORLD_SIZE": "8", "GROUP_RANK": "0"}, True),
    ({"LOCAL_WORLD_SIZE": "9", "GROUP_RANK": "0"}, False),
    ({"LOCAL_WORLD_SIZE": "0"}, False),
    ({"WORLD_SIZE": "0"}, False),
    ({"GROUP_RANK": "1"}, True),
    ({"GROUP_RANK": "2"}, False),
    ({"GROUP_RANK": None, "NODE_RANK": "1"}, True),
    ({"GROUP_RANK": None, "NODE_RANK": "2"}, False),
    ({"GROUP_WORLD_SIZE": "2"}, True),
    ({"GROUP_WORLD_SIZE": "1"}, False),  # GROUP_RANK 1 is out of range
    ({"LOCAL_RANK": "x"}, False),
])
def test_torchrun_limits(changes: dict[str, str | None], ok: bool) -> None:
    env = changed(TORCHRUN, **changes)
    if ok:
        assert derive(env).rank == int(env["RANK"])
    else:
        with pytest.raises(DistEnvError):
            derive(env)


def test_torchrun_node_values() -> None:
    assert derive(changed(TORCHRUN, GROUP_RANK="1", NODE_RANK="0")).node_rank == 1  # GROUP_RANK first
    no_group = changed(TORCHRUN, GROUP_RANK=None)
    for rank, node in ((0, 0), (3, 0), (4, 1), (7, 1)):
        dist = derive(changed(no_group, RANK=str(rank)))
        assert (dist.node_rank, dist.num_nodes) == (node, 2)
    assert derive(changed(TORCHRUN, WORLD_SIZE="12", GROUP_RANK=None)).num_nodes == 3
    assert derive(changed(TORCHRUN, WORLD_SIZE="12", GROUP_WORLD_SIZE="5")).num_nodes == 5
    with pytest.raises(DistEnvError, match=r"node rank \(RANK // LOCAL_WORLD_SIZE\)=2 is out of range"):
        derive(changed(TORCHRUN, RANK="9", WORLD_SIZE="10", GROUP_RANK=None, GROUP_WORLD_SIZE="2"))


def test_torch_env_and_as_dict_state_every_value() -> None:
    dist = DistEnv(rank=5, local_rank=1, world_size=8, local_world_size=4, node_rank=1, num_nodes=2,
                   master_addr="h", master_port=1234)
    assert dist.torch_env() == {"RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4",
                                "NODE_RANK": "1", "GROUP_RANK": "1", "GROUP_WORLD_SIZE": "2",
                                "MASTER_ADDR": "h", "MASTER_PORT": "1234"}
    assert dist.as_dict() == {"rank": 5, "local_rank": 1, "world_size": 8, "local_world_size": 4,
                              "node_rank": 1, "num_nodes": 2, "master_addr": "h", "master_port": 1234}


def test_not_launched_names_the_stray_variables() -> None:
    with pytest.raises(DistEnvError) as info:
        derive({"LOCAL_RANK": "0", "GROUP_RANK": "0", "PATH": "/bin"})
    assert "(LOCAL_RANK, GROUP_RANK set, but not RANK)" in info.value.message
    with pytest.raises(DistEnvError) as info:
        derive({"PATH": "/bin"})
    assert info.value.message.endswith("neither SLURM_JOB_ID nor RANK is set")


# --- SLURM_TASKS_PER_NODE ---------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("1", [1]), ("2(x1)", [2]), (" 3, 2(x2) ,1", [3, 2, 2, 1]), ("10(x3)", [10, 10, 10]),
])
def test_tasks_per_node_forms(text: str, expected: list[int]) -> None:
    assert parse_tasks_per_node(text) == expected


@pytest.mark.parametrize(("text", "ok"), [
    ("1(x1000000)", True), ("1(x1000001)", False), ("1(x999999),1", True), ("1(x1000000),1", False),
])
def test_tasks_per_node_length_limit(text: str, ok: bool) -> None:
    if ok:
        assert len(parse_tasks_per_node(text)) == 1_000_000
    else:
        with pytest.raises(DistEnvError, match="lists more than 1,000,000 nodes"):
            parse_tasks_per_node(text)


def test_tasks_per_node_names_the_variable() -> None:
    with pytest.raises(DistEnvError, match="SLURM_STEP_TASKS_PER_NODE='0'"):
        parse_tasks_per_node("0", "SLURM_STEP_TASKS_PER_NODE")


# --- master_port and job_master_port ------------------------------------------------------------------

@pytest.mark.parametrize(("port_range", "ok"), [
    ((1, 1), True), ((0, 10), False), ((65535, 65535), True), ((10, 65536), False), ((5, 4), False),
    ((5, 5), True),
])
def test_port_range_edges(port_range: tuple[int, int], ok: bool) -> None:
    if ok:
        assert master_port("3", 0, port_range) in range(port_range[0], port_range[1] + 1)
    else:
        with pytest.raises(ConfigError, match="is invalid"):
            master_port("3", 0, port_range)


@pytest.mark.parametrize("restarts", [-1, True])
def test_bad_restart_counts(restarts: int) -> None:
    with pytest.raises(DistEnvError, match="restart count"):
        master_port("3", restarts, DEFAULT_PORT_RANGE)


def test_job_numbers() -> None:
    assert master_port(0, 0, DEFAULT_PORT_RANGE) == 20000
    with pytest.raises(DistEnvError, match="job id -1 is negative"):
        master_port(-1, 0, DEFAULT_PORT_RANGE)
    assert master_port("10_0", 0, DEFAULT_PORT_RANGE) == 20010
    assert master_port("0+10", 0, DEFAULT_PORT_RANGE) == 20010


@pytest.mark.parametrize(("restart", "expected"), [(None, JOB1_PORT), ("", JOB1_PORT), (" ", JOB1_PORT),
                                                   ("0", JOB1_PORT), ("1", 27892), (" 1 ", 27892)])
def test_job_master_port_restart_count(restart: str | None, expected: int) -> None:
    env = changed({"SLURM_JOBID": "1"}, SLURM_RESTART_COUNT=restart)
    assert job_master_port(env) == expected


# --- the simulated allocation -------------------------------------------------------------------------

@pytest.mark.parametrize(("hosts", "tasks", "gpus"), [([], 1, 0), (["a"], 0, 0), (["a"], 1, -1)])
def test_simulation_refuses(hosts: list[str], tasks: int, gpus: int) -> None:
    with pytest.raises(ConfigError):
        list(simulate_slurm_task_envs(hosts, tasks, "1", gpus, "a", 1))


def test_simulation_values() -> None:
    one = list(simulate_slurm_task_envs(["a"], 2, "9", 0, "a", 5))
    assert [e["SLURM_TASKS_PER_NODE"] for e in one] == ["2", "2"]
    assert "CUDA_VISIBLE_DEVICES" not in one[0] and "SLURM_GPUS_ON_NODE" not in one[0]
    two = list(simulate_slurm_task_envs(["a1", "a2"], 2, "9", 3, "a1", 5))
    assert two[0]["SLURM_TASKS_PER_NODE"] == "2(x2)"
    assert two[0]["CUDA_VISIBLE_DEVICES"] == "0,1,2" and two[0]["SLURM_GPUS_ON_NODE"] == "3"
    assert [e["SLURM_GTIDS"] for e in two] == ["0,1", "0,1", "2,3", "2,3"]
    assert [(e["SLURM_PROCID"], e["SLURM_LOCALID"], e["SLURM_NODEID"]) for e in two] == [
        ("0", "0", "0"), ("1", "1", "0"), ("2", "0", "1"), ("3", "1", "1")]
    assert two[3]["SLURM_STEP_NODELIST"] == "a[1-2]" and two[3]["SLURM_NTASKS"] == "4"
