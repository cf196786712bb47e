"""Planning at its edges: which value wins (command line, then the job's resources, then cluster.yaml's
defaults, then the built-ins), every partition limit at N and N+1, and every refusal with its fix.

The test cluster (tests/support/environment.py): partitions gpu (gpu[001-064], 8 a100, 96 CPUs, 1000G, max 2 days),
debug (dbg[1-4], 4 GPUs, 32 CPUs, 256G, max 02:00:00), cpu (cpu[001-128], 64 CPUs, 256G, max 1 day);
defaults.partition gpu, defaults.time 04:00:00; launcher.preempt_before 180.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.errors import ConfigError
from orchestrator.slurm.plan import SubmitPlan, folder_name, make_request, simulate_ranks

MakePlan = Callable[..., SubmitPlan]
WriteCluster = Callable[..., Path]
WriteJob = Callable[..., Path]


def sbatch(plan: SubmitPlan, option: str) -> list[str]:
    """The values of ``#SBATCH --option=`` lines."""
    prefix = f"#SBATCH --{option}="
    return [line[len(prefix):] for line in plan.script.splitlines() if line.startswith(prefix)]


# --- precedence -------------------------------------------------------------------------------------

def test_account_and_qos_command_line_beats_defaults(make_plan: MakePlan, write_cluster: WriteCluster) -> None:
    cluster = write_cluster(defaults={"account": "dflt-acct", "qos": "dflt-qos"})
    plan = make_plan(cluster, account="cli-acct", qos="cli-qos")
    assert (sbatch(plan, "account"), sbatch(plan, "qos")) == (["cli-acct"], ["cli-qos"])
    plan = make_plan(cluster)
    assert (sbatch(plan, "account"), sbatch(plan, "qos")) == (["dflt-acct"], ["dflt-qos"])
    plan = make_plan(write_cluster(), account="cli-acct")
    assert (sbatch(plan, "account"), sbatch(plan, "qos")) == (["cli-acct"], [])
    plan = make_plan(write_cluster())
    assert (sbatch(plan, "account"), sbatch(plan, "qos")) == ([], [])


def test_partition_command_line_then_job_then_default_then_first(make_plan: MakePlan, write_cluster: WriteCluster,
                                                                  write_job: WriteJob) -> None:
    with_default = write_cluster(defaults={"partition": "debug"})
    no_default = write_cluster(name="plain.yaml", defaults={"partition": None})
    job_cpu = write_job("jcpu", gpus=0, partition="cpu")
    job_none = write_job("jnone", gpus=4)
    assert make_plan(with_default, job_cpu, partition="gpu", gpus=4).run_config.partition == "gpu"
    assert make_plan(with_default, job_cpu, ntasks_per_node=2).run_config.partition == "cpu"
    assert make_plan(with_default, job_none).run_config.partition == "debug"
    assert make_plan(no_default, job_none).run_config.partition == "gpu"  # the first of gpu, debug, cpu


def test_no_default_partition_is_the_first_in_the_file(make_plan: MakePlan, write_cluster: WriteCluster,
                                                       write_job: WriteJob) -> None:
    parts = [{"name": name, "nodes": f"{name}[1-2]", "gpus_per_node": 4, "cpus_per_node": 8, "mem_per_node": 8000}
             for name in ("zeta", "alpha", "mid")]
    cluster = write_cluster(partitions=parts, defaults={"partition": None})
    assert make_plan(cluster, write_job(gpus=4)).run_config.partition == "zeta"


def test_nodes_and_gpus_command_line_then_job(make_plan: MakePlan, write_job: WriteJob) -> None:
    job = write_job(nodes=3, gpus=2)
    cfg = make_plan(job=job).run_config
    assert (cfg.nodes, cfg.gpus_per_node, cfg.tasks_per_node) == (3, 2, 2)
    cfg = make_plan(job=job, nodes=5).run_config
    assert (cfg.nodes, cfg.gpus_per_node) == (5, 2)
    cfg = make_plan(job=job, gpus=6).run_config
    assert (cfg.nodes, cfg.gpus_per_node, cfg.tasks_per_node) == (3, 6, 6)
    cfg = make_plan(job=job, gpus=6, ntasks_per_node=6).run_config
    assert (cfg.gpus_per_node, cfg.tasks_per_node) == (6, 6)


@pytest.mark.parametrize(("cli", "job", "default", "expected"), [
    (5, 3, 2, 5), (None, 3, 2, 3), (None, None, 2, 2), (None, None, None, 12),  # 96 CPUs / 8 tasks
])
def test_cpus_per_task_order(make_plan: MakePlan, write_cluster: WriteCluster, write_job: WriteJob,
                             cli: int | None, job: int | None, default: int | None, expected: int) -> None:
    cluster = write_cluster(defaults={"cpus_per_task": default})
    request = {"cpus_per_task": cli} if cli else {}
    plan = make_plan(cluster, write_job(gpus=8, cpus_per_task=job), **request)
    assert plan.run_config.cpus_per_task == expected
    assert sbatch(plan, "cpus-per-task") == [str(expected)]


@pytest.mark.parametrize(("cli", "job", "default", "expected"), [
    ("00:10:00", "00:20:00", "00:30:00", "00:10:00"),
    (None, "00:20:00", "00:30:00", "00:20:00"),
    (None, None, "00:30:00", "00:30:00"),
    (None, None, None, "01:00:00"),  # the built-in defaults.time
])
def test_time_order(make_plan: MakePlan, write_cluster: WriteCluster, write_job: WriteJob, cli: str | None,
                    job: str | None, default: str | None, expected: str) -> None:
    cluster = write_cluster(defaults={"time": default} if default else {"time": "01:00:00"})
    request = {"time": cli} if cli else {}
    assert make_plan(cluster, write_job(time=job), **request).run_config.time == expected


def test_only_the_default_time_is_capped(make_plan: MakePlan, write_cluster: WriteCluster,
                                         write_job: WriteJob) -> None:
    capped = write_cluster(defaults={"time": "05:00:00"})
    assert make_plan(capped, partition="debug", gpus=4).run_config.time == "02:00:00"
    with pytest.raises(ConfigError, match="exceeds max_time=02:00:00"):
        make_plan(capped, write_job("timed", time="05:00:00"), partition="debug", gpus=4)
    unlimited = write_cluster(defaults={"time": "UNLIMITED"})
    assert make_plan(unlimited, partition="debug", gpus=4).run_config.time == "02:00:00"


def test_job_name_command_line_then_job(make_plan: MakePlan, write_job: WriteJob) -> None:
    job = write_job("named")
    assert make_plan(job=job).run_config.job_name == "named"
    assert make_plan(job=job, job_name="other").run_config.job_name == "other"
    for blank in ("", " ", "\t"):
        with pytest.raises(ConfigError, match="the job name is empty"):
            make_plan(job=job, job_name=blank)


# --- memory -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("partition", "gpus", "per_gpu"), [
    ("gpu", 1, 128000), ("gpu", 4, 128000), ("gpu", 8, 128000),  # 1000G / the node's 8 GPUs
    ("debug", 1, 65536), ("debug", 4, 65536),                    # 256G / the node's 4 GPUs
])
def test_default_memory_per_gpu_is_the_nodes_share(make_plan: MakePlan, partition: str, gpus: int,
                                                   per_gpu: int) -> None:
    plan = make_plan(partition=partition, gpus=gpus)
    assert sbatch(plan, "mem-per-gpu") == [f"{per_gpu}M"]
    assert sbatch(plan, "mem") == []


@pytest.mark.parametrize(("mem_per_gpu", "gpus", "ok"), [
    ("128000M", 8, True), ("128001M", 8, False), ("125G", 8, True), (256000, 4, True), (256001, 4, False),
    ("1000G", 1, True), ("1000G", 2, False),
])
def test_configured_memory_per_gpu_at_the_node_limit(make_plan: MakePlan, write_cluster: WriteCluster,
                                                     mem_per_gpu: str | int, gpus: int, ok: bool) -> None:
    cluster = write_cluster(defaults={"mem_per_gpu": mem_per_gpu})
    if ok:
        assert len(sbatch(make_plan(cluster, gpus=gpus), "mem-per-gpu")) == 1
    else:
        with pytest.raises(ConfigError) as info:
            make_plan(cluster, gpus=gpus)
        assert f"defaults.mem_per_gpu={mem_per_gpu} x {gpus} GPUs exceeds mem_per_node=1000G" in info.value.message
        assert info.value.hint is not None and f"{1024000 // gpus}M or less" in info.value.hint


def test_zero_memory_per_gpu_means_no_memory_option(make_plan: MakePlan, write_cluster: WriteCluster) -> None:
    plan = make_plan(write_cluster(defaults={"mem_per_gpu": 0}), gpus=2)
    assert plan.context.mem_per_gpu_mb is None and plan.context.mem_mb is None
    assert sbatch(plan, "mem-per-gpu") == [] and sbatch(plan, "mem") == []


@pytest.mark.parametrize(("tasks", "cpus", "mem"), [(4, 16, 262144), (1, 1, 4096), (2, 8, 65536), (64, 1, 262144)])
def test_cpu_jobs_get_their_cpus_share_of_the_memory(make_plan: MakePlan, tasks: int, cpus: int, mem: int) -> None:
    plan = make_plan(partition="cpu", gpus=0, ntasks_per_node=tasks, cpus_per_task=cpus)
    assert sbatch(plan, "mem") == [f"{mem}M"]  # 256G x tasks x cpus / 64
    assert sbatch(plan, "mem-per-gpu") == [] and sbatch(plan, "gpus-per-node") == []


# --- limits at N and N+1 ----------------------------------------------------------------------------

@pytest.mark.parametrize(("request_values", "ok"), [
    ({"nodes": 64}, True), ({"nodes": 65}, False), ({"nodes": 1}, True),
    ({"gpus": 8}, True), ({"gpus": 9}, False),
    ({"partition": "debug", "gpus": 4, "nodes": 4}, True), ({"partition": "debug", "gpus": 4, "nodes": 5}, False),
    ({"partition": "debug", "gpus": 5}, False),
    ({"gpus": 4, "ntasks_per_node": 4}, True), ({"gpus": 4, "ntasks_per_node": 5}, False),
    ({"gpus": 4, "ntasks_per_node": 1}, False),  # 4 GPUs per task: the built-in entrypoint uses one per rank
    ({"gpus": 8, "cpus_per_task": 12}, True), ({"gpus": 8, "cpus_per_task": 13}, False),
    ({"gpus": 1, "cpus_per_task": 96}, True), ({"gpus": 1, "cpus_per_task": 97}, False),
    ({"partition": "cpu", "gpus": 0, "ntasks_per_node": 64}, True),
    ({"partition": "cpu", "gpus": 0, "ntasks_per_node": 65}, False),
    ({"partition": "cpu", "gpus": 0, "ntasks_per_node": 9}, True),  # 64 // 9 = 7 CPUs each
    ({"partition": "cpu", "gpus": 0}, False),
    ({"time": "2-00:00:00"}, True), ({"time": "2-00:00:01"}, False),
    ({"time": "00:03:01"}, True), ({"time": "00:03:00"}, False), ({"time": "3"}, False), ({"time": "4"}, True),
    ({"partition": "debug", "gpus": 4, "time": "02:00:00"}, True),
    ({"partition": "debug", "gpus": 4, "time": "02:00:01"}, False),
])
def test_partition_limits(make_plan: MakePlan, request_values: dict[str, Any], ok: bool) -> None:
    if ok:
        make_plan(**request_values)
    else:
        with pytest.raises(ConfigError):
            make_plan(**request_values)


@pytest.mark.parametrize(("request_values", "message", "hint"), [
    ({"nodes": 65}, "--nodes 65 exceeds the 64 node(s) of partition gpu", "use --nodes 64 or fewer"),
    ({"gpus": 9}, "--gpus 9 exceeds gpus_per_node=8 of partition gpu", "use --gpus 8 and --nodes 2"),
    ({"gpus": 12, "nodes": 3}, "--gpus 12 exceeds gpus_per_node=8", "use --gpus 8 and --nodes 5"),
    ({"gpus": 16, "nodes": 1}, "--gpus 16 exceeds", "use --gpus 8 and --nodes 2"),
    ({"gpus": 17, "nodes": 1}, "--gpus 17 exceeds", "use --gpus 8 and --nodes 3"),
    ({"gpus": 4, "cpus_per_task": 25}, "25 CPUs per task x 4 tasks per node = 100 CPUs exceeds cpus_per_node=96",
     "use --cpus-per-task 24 or fewer"),
    ({"partition": "cpu", "gpus": 0, "ntasks_per_node": 65, "cpus_per_task": 1},
     "1 CPUs per task x 65 tasks per node = 65 CPUs", "use --ntasks-per-node 64 or fewer"),
    ({"time": "00:03:00"}, "--time 00:03:00 is not longer than launcher.preempt_before=180 s",
     "use a --time above 00:03:00 or lower launcher.preempt_before"),
])
def test_refusals_name_the_limit_and_the_fix(make_plan: MakePlan, request_values: dict[str, Any], message: str,
                                              hint: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_plan(**request_values)
    assert message in info.value.message
    assert info.value.hint is not None and hint in info.value.hint


def test_preempt_before_zero_allows_the_shortest_time(make_plan: MakePlan, write_cluster: WriteCluster) -> None:
    cluster = write_cluster(launcher={"preempt_before": 0})
    assert make_plan(cluster, time="0:1").run_config.time == "00:00:01"


@pytest.mark.parametrize(("values", "flag"), [
    ({"nodes": 0}, "--nodes 0"), ({"gpus": -1}, "--gpus -1"), ({"ntasks_per_node": 0}, "--ntasks-per-node 0"),
    ({"cpus_per_task": 0}, "--cpus-per-task 0"), ({"bogus": 1}, "--bogus 1"),
])
def test_request_refusals_name_the_flag(values: dict[str, Any], flag: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_request({"job": "x", **values})
    assert info.value.message.startswith(flag)
    assert info.value.hint == "see orch submit --help"


def test_request_bounds_accept_the_smallest_values() -> None:
    request = make_request({"job": "x", "nodes": 1, "gpus": 0, "ntasks_per_node": 1, "cpus_per_task": 1})
    assert (request.nodes, request.gpus, request.ntasks_per_node, request.cpus_per_task) == (1, 0, 1, 1)


def test_templates_dir_is_checked_before_rendering(make_plan: MakePlan, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a directory"):
        make_plan(templates=tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="holds none of the template files"):
        make_plan(templates=tmp_path / "empty")


def test_plans_and_rank_rows_are_snapshots(make_plan: MakePlan) -> None:
    plan = make_plan(nodes=1, gpus=1)
    with pytest.raises(AttributeError):
        plan.script = ""  # type: ignore[misc]
    with pytest.raises(AttributeError):
        plan.ranks[0].host = "elsewhere"  # type: ignore[misc]


def test_job_root_must_be_absolute(make_plan: MakePlan) -> None:
    with pytest.raises(ConfigError, match="job root jobs is not absolute"):
        make_plan(job_root=Path("jobs"))


# --- what the plan holds ----------------------------------------------------------------------------

def test_gpu_spec_and_master_addr(make_plan: MakePlan) -> None:
    one = make_plan(nodes=1, gpus=2)
    assert sbatch(one, "gpus-per-node") == ["a100:2"]
    assert one.context.master_addr == "127.0.0.1"
    assert {r.env.master_addr for r in one.ranks} == {"127.0.0.1"}
    two = make_plan(nodes=2, gpus=2)
    assert two.context.master_addr is None
    assert {r.env.master_addr for r in two.ranks} == {"gpu001"}
    assert [r.host for r in two.ranks] == ["gpu001", "gpu001", "gpu002", "gpu002"]
    assert [r.device for r in two.ranks] == ["cuda:0", "cuda:1", "cuda:0", "cuda:1"]
    assert sbatch(make_plan(partition="debug", nodes=1, gpus=3), "gpus-per-node") == ["3"]  # no gpu_type


def test_simulated_ranks_on_cpu(make_plan: MakePlan) -> None:
    rows = simulate_ranks(["c1", "c2"], 2, 0, "c1", (30000, 30000))
    assert [r.device for r in rows] == ["cpu"] * 4
    assert [r.env.rank for r in rows] == [0, 1, 2, 3]
    assert {r.env.master_port for r in rows} == {30000}
    assert rows[3].as_dict() == {"host": "c2", "device": "cpu", "devices": [], "rank": 3, "local_rank": 1,
                                 "world_size": 4, "local_world_size": 2, "node_rank": 1, "num_nodes": 2,
                                 "master_addr": "c1", "master_port": 30000}
    plan = make_plan(partition="cpu", gpus=0, ntasks_per_node=2, nodes=2)
    assert [r.host for r in plan.ranks] == ["cpu001", "cpu001", "cpu002", "cpu002"]


@pytest.mark.parametrize(("name", "folder"), [
    ("mnist", "mnist"), ("a b", "a_b"), ("../x", "x"), ("..", "job"), ("", "job"), ("_a_", "a"),
    ("é", "job"), ("a.b-c_d", "a.b-c_d"), ("x" * 70, "x" * 64), ("a//b", "a_b"),
])
def test_folder_names(name: str, folder: str) -> None:
    assert folder_name(name) == folder
