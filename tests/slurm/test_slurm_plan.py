"""Planning: resolution order, validation before anything runs (field + fix), the rank table from
the same derivation the tasks use, job.json, and the job folder's permissions."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from orchestrator.env import distenv, masterport, taskenv
from orchestrator.errors import ConfigError
from orchestrator.slurm.plan import (
    DRY_RUN_JOB_ID,
    SubmitPlan,
    folder_name,
    make_request,
    nodes_wanted,
    simulate_ranks,
    write_job_dir,
)
from orchestrator.spec.job import Resources
from orchestrator.spec.runconfig import read_run_config

MakePlan = Callable[..., SubmitPlan]
PORT_RANGE = masterport.DEFAULT_PORT_RANGE


def test_the_nodes_asked_for_win_over_the_jobs_even_zero() -> None:
    """One rule for the doctor gate, the bad-node exclusion and the plan: --nodes when given (0 too: the
    plan refuses it by name), else the job's."""
    assert [nodes_wanted(asked, Resources(nodes=4)) for asked in (None, 2, 0)] == [4, 2, 0]


def test_cli_values_win_over_job_and_cluster_defaults(make_plan: MakePlan, write_job: Callable[..., Path],
                                                      write_cluster: Callable[..., Path]) -> None:
    job = write_job(nodes=2, gpus=4, time="01:00:00", partition="debug", cpus_per_task=2)
    cluster = write_cluster(defaults={"cpus_per_task": 3, "time": "00:30:00"})
    from_job = make_plan(cluster, job)
    cfg = from_job.run_config
    assert (cfg.nodes, cfg.gpus_per_node, cfg.tasks_per_node, cfg.cpus_per_task) == (2, 4, 4, 2)
    assert (cfg.partition, cfg.time) == ("debug", "01:00:00")
    from_cli = make_plan(cluster, job, nodes=1, gpus=2, partition="gpu", time="2:00:00", cpus_per_task=5)
    cfg = from_cli.run_config
    resolved = (cfg.nodes, cfg.gpus_per_node, cfg.cpus_per_task, cfg.partition, cfg.time)
    assert resolved == (1, 2, 5, "gpu", "02:00:00")


def test_cluster_defaults_fill_in(make_plan: MakePlan, write_cluster: Callable[..., Path]) -> None:
    cfg = make_plan(write_cluster(defaults={"cpus_per_task": 3, "time": "00:30:00"})).run_config
    assert (cfg.partition, cfg.time, cfg.cpus_per_task) == ("gpu", "00:30:00", 3)
    derived = make_plan(nodes=1, gpus=8).run_config  # 96 CPUs / 8 tasks
    assert derived.cpus_per_task == 12


def test_default_time_is_capped_at_the_partitions_limit(make_plan: MakePlan) -> None:
    """defaults.time (04:00:00) on the debug partition (max 02:00:00): capped; an explicit --time is not."""
    assert make_plan(partition="debug", gpus=4).run_config.time == "02:00:00"
    with pytest.raises(ConfigError, match="--time 03:00:00 exceeds max_time=02:00:00 of partition debug"):
        make_plan(partition="debug", gpus=4, time="03:00:00")


@pytest.mark.parametrize(("request_values", "message", "hint"), [
    ({"nodes": 65}, "--nodes 65 exceeds the 64 node(s) of partition gpu", "use --nodes 64 or fewer"),
    ({"gpus": 9}, "--gpus 9 exceeds gpus_per_node=8 of partition gpu", "use --gpus 8 and --nodes 2"),
    ({"gpus": 16, "nodes": 2}, "--gpus 16 exceeds gpus_per_node=8", "use --gpus 8 and --nodes 4"),
    ({"partition": "cpu", "gpus": 1, "ntasks_per_node": 2},
     "--gpus 1 exceeds gpus_per_node=0 of partition cpu", "use --gpus 0 --ntasks-per-node N"),
    ({"partition": "cpu", "gpus": 0}, "--gpus 0: orch cannot derive the number of tasks per node",
     "use --ntasks-per-node N"),
    ({"gpus": 4, "ntasks_per_node": 5}, "--ntasks-per-node 5 exceeds --gpus 4", "use --ntasks-per-node 4"),
    ({"time": "3-00:00:00"}, "--time 3-00:00:00 exceeds max_time=2-00:00:00 of partition gpu",
     "use --time 2-00:00:00 or less"),
    ({"time": "UNLIMITED"}, "--time UNLIMITED exceeds max_time", "use --time 2-00:00:00"),
    ({"time": "1:2:3:4"}, "--time: invalid time '1:2:3:4'", "--time 04:00:00"),
    ({"time": "soon"}, "--time: invalid time 'soon'", "--time 04:00:00"),
    ({"time": "2"}, "--time 2 is not longer than launcher.preempt_before=180 s",
     "use a --time above 00:03:00"),
    ({"partition": "nope"}, "unknown partition 'nope'", "gpu, debug, cpu"),
    ({"gpus": 8, "cpus_per_task": 13},
     "13 CPUs per task x 8 tasks per node = 104 CPUs exceeds cpus_per_node=96",
     "use --cpus-per-task 12 or fewer"),
    ({"partition": "cpu", "gpus": 0, "ntasks_per_node": 65}, "exceeds cpus_per_node=64",
     "use --ntasks-per-node 64 or fewer"),
    ({"overrides": {"nope": "1"}}, "unknown override 'nope'", "width"),
    ({"overrides": {"lr": "fast"}}, "override lr=fast", "valid keys"),
    ({"overrides": {"epochs": "0"}}, "override epochs=0", "valid keys"),
    ({"job_name": "   "}, "the job name is empty", "--job-name"),
    ({"job_name": "two\nlines"}, "the job name (--job-name) contains a newline", "remove the newline"),
    ({"account": "a\0b"}, "the account (--account or defaults.account) contains a NUL byte", "remove"),
])
def test_bad_requests_name_the_field_and_the_fix(make_plan: MakePlan, request_values: dict[str, Any],
                                                 message: str, hint: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_plan(**request_values)
    assert message in info.value.message
    assert hint in (info.value.hint or "")


@pytest.mark.parametrize(("values", "flag"), [({"nodes": 0}, "--nodes 0"), ({"gpus": -1}, "--gpus -1"),
                                              ({"cpus_per_task": 0}, "--cpus-per-task 0"),
                                              ({"ntasks_per_node": 0}, "--ntasks-per-node 0")])
def test_request_values_are_checked_by_flag(values: dict[str, Any], flag: str) -> None:
    with pytest.raises(ConfigError, match=flag):
        make_request({"job": "x", **values})


def test_mem_per_gpu_that_does_not_fit_is_refused(make_plan: MakePlan,
                                                  write_cluster: Callable[..., Path]) -> None:
    with pytest.raises(ConfigError, match=r"defaults\.mem_per_gpu=200G x 8 GPUs exceeds mem_per_node=1000G"):
        make_plan(write_cluster(defaults={"mem_per_gpu": "200G"}), gpus=8)


def test_memory_request(make_plan: MakePlan, write_cluster: Callable[..., Path]) -> None:
    assert make_plan(gpus=8).context.mem_per_gpu_mb == 1000 * 1024 // 8
    assert make_plan(write_cluster(defaults={"mem_per_gpu": "100G"}), gpus=8).context.mem_per_gpu_mb == 102400
    cpu = make_plan(partition="cpu", gpus=0, ntasks_per_node=4, cpus_per_task=8).context  # 32 of 64 CPUs
    assert (cpu.mem_per_gpu_mb, cpu.mem_mb) == (None, 256 * 1024 // 2)


def test_rank_table_of_2x8(make_plan: MakePlan) -> None:
    plan = make_plan(nodes=2, gpus=8)
    assert len(plan.ranks) == 16
    port = masterport.master_port(DRY_RUN_JOB_ID, 0, PORT_RANGE)
    for index, row in enumerate(plan.ranks):
        env = row.env
        assert (env.rank, env.local_rank, env.node_rank) == (index, index % 8, index // 8)
        assert (env.world_size, env.local_world_size, env.num_nodes) == (16, 8, 2)
        assert row.host == ("gpu001", "gpu002")[index // 8]
        assert row.device == f"cuda:{index % 8}"
        assert (env.master_addr, env.master_port) == ("gpu001", port)


def test_rank_table_single_node_is_loopback_and_cpu_ranks_say_cpu(make_plan: MakePlan) -> None:
    single = make_plan(nodes=1, gpus=4)
    assert {r.env.master_addr for r in single.ranks} == {"127.0.0.1"}
    cpu = make_plan(partition="cpu", nodes=3, gpus=0, ntasks_per_node=2)
    assert [r.device for r in cpu.ranks] == ["cpu"] * 6
    assert [r.host for r in cpu.ranks] == ["cpu001", "cpu001", "cpu002", "cpu002", "cpu003", "cpu003"]


def test_rank_table_rows_are_what_derive_gives_each_simulated_task() -> None:
    hosts = ["a1", "a2", "a3"]
    rows = simulate_ranks(hosts, 2, 2, "a1", PORT_RANGE)
    port = masterport.master_port(DRY_RUN_JOB_ID, 0, PORT_RANGE)
    envs = list(taskenv.simulate_slurm_task_envs(hosts, 2, DRY_RUN_JOB_ID, 2, "a1", port))
    assert [r.env for r in rows] == [distenv.derive(e, port_range=PORT_RANGE) for e in envs]


def test_run_config_is_the_resolved_job(make_plan: MakePlan, write_job: Callable[..., Path]) -> None:
    job = write_job()
    plan = make_plan(job=job, nodes=2, gpus=2, overrides={"lr": "0.5", "width": "3"}, data_dir="/data")
    cfg = plan.run_config
    assert cfg.mode == "slurm" and cfg.job_file == str(job.resolve())
    assert cfg.params["lr"] == 0.5 and cfg.params["width"] == 3 and cfg.params["epochs"] == 1
    assert cfg.launcher.python == "/opt/orch/.venv/bin/python"
    assert cfg.job_dir == str(plan.job_dir) == "/home/user/orch-jobs/tiny-20240102-030405-abcdef"
    assert (cfg.data_dir, cfg.cluster_name, cfg.world_size) == ("/data", "testcluster", 4)
    assert cfg.env["NCCL_SOCKET_IFNAME"] == "ib0"
    assert cfg.created == "2024-01-02T03:04:05"


@pytest.mark.parametrize(("name", "folder"), [
    ("mnist", "mnist"), ("my job/../x", "my_job_.._x"), ("$(rm -rf ~)", "rm_-rf"), ("..", "job"),
    ("ünï", "n"), ("✓", "job"), ("a" * 100, "a" * 64),
])
def test_folder_name_is_safe_but_the_script_keeps_the_name(name: str, folder: str) -> None:
    assert folder_name(name) == folder


def test_job_name_reaches_sbatch_unchanged(make_plan: MakePlan) -> None:
    plan = make_plan(nodes=1, gpus=1, job_name="my job/$(x)")
    assert plan.job_dir.name == "my_job_x-20240102-030405-abcdef"
    assert '#SBATCH --job-name="my job/\\$(x)"\n' in plan.script  # escaped: inert in bash too; sbatch reads $


class _NoEnvironment(dict):  # type: ignore[type-arg]
    """An ``os.environ`` that fails the test on any read."""

    def __getitem__(self, key: object) -> str:
        raise AssertionError(f"build_plan read os.environ[{key!r}]")

    def get(self, key: object, default: object = None) -> str:
        raise AssertionError(f"build_plan read os.environ.get({key!r})")

    def __contains__(self, key: object) -> bool:
        raise AssertionError(f"build_plan asked whether {key!r} is in os.environ")

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("build_plan iterated over os.environ")


def test_build_plan_is_pure(write_cluster: Callable[..., Path], write_job: Callable[..., Path],
                            monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No subprocess, no environment, nothing written (the job root does not even exist)."""
    from orchestrator.records.cache import load_cluster
    from orchestrator.slurm.plan import build_plan
    from orchestrator.spec.job import load_job

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("build_plan started a subprocess")

    cluster = load_cluster(write_cluster())  # the inputs are read before the environment goes away
    job_path = write_job()
    loaded = load_job(str(job_path), {}, job_path.parent)
    request = make_request({"job": str(job_path), "nodes": 2, "gpus": 8})
    job_root = tmp_path / "not-created"
    before = sorted(p.name for p in tmp_path.iterdir())
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setattr(os, "environ", _NoEnvironment())
    plan = build_plan(request, cluster, loaded, python="/opt/py", now=datetime(2024, 1, 2, 3, 4, 5), token="abc",
                      job_root=job_root)
    monkeypatch.undo()
    assert plan.script.startswith("#!/bin/bash\n")
    assert not job_root.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.fixture
def umask() -> Iterator[Callable[[int], None]]:
    old = os.umask(0o022)
    os.umask(old)

    def set_umask(value: int) -> None:
        os.umask(value)

    yield set_umask
    os.umask(old)


# the folders are 0700 and the files 0600 (sbatch.sh 0700) whatever the umask: a job folder holds secrets
@pytest.mark.parametrize(("mask", "dir_mode"), [(0o022, 0o700), (0o002, 0o700), (0o000, 0o700),
                                                (0o077, 0o700), (0o027, 0o700), (0o277, 0o700)])
def test_job_folder_respects_the_umask_and_is_never_world_writable(
        make_plan: MakePlan, tmp_path: Path, umask: Callable[[int], None], mask: int, dir_mode: int) -> None:
    plan = make_plan(nodes=2, gpus=2, job_root=tmp_path / "jobs")
    umask(mask)
    job_dir = write_job_dir(plan)
    assert stat.S_IMODE(job_dir.stat().st_mode) == dir_mode
    assert stat.S_IMODE((job_dir / "logs").stat().st_mode) == dir_mode
    for path in job_dir.rglob("*"):
        assert not path.stat().st_mode & 0o077, path
    assert (job_dir / "sbatch.sh").read_text(encoding="utf-8") == plan.script
    assert read_run_config(job_dir) == plan.run_config


def test_write_job_dir_never_reuses_a_folder(make_plan: MakePlan, tmp_path: Path) -> None:
    plan = make_plan(nodes=1, gpus=1, job_root=tmp_path / "jobs")
    write_job_dir(plan)
    with pytest.raises(ConfigError, match="already exists"):  # a clear error, and the folder stays as it was
        write_job_dir(plan)
    assert (plan.job_dir / "job.json").is_file()
