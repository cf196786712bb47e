"""orch exec's step job folder (orchestrator/task/stepjob.py): its name from Slurm's variables alone, job.json
from the step's variables, rank 0 creating it once, the other ranks waiting for it (bounded, stale ones refused)."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from orchestrator.env.distenv import derive
from orchestrator.errors import ConfigError, DistEnvError
from orchestrator.spec.runconfig import RunConfig, read_run_config
from orchestrator.spec.script import ScriptTarget
from orchestrator.task import stepjob

TARGET = ScriptTarget(kind="script", target="/src/train.py", cwd="/src", args=["--lr", "0.1"])
NOW = datetime(2026, 11, 25, 10, 0, tzinfo=timezone.utc)


def step_env(rank: int = 0, *, nodes: int = 2, tasks: int = 2, **extra: str) -> dict[str, str]:
    """One task's Slurm variables of ``srun`` over ``nodes`` x ``tasks`` (block distribution)."""
    hosts = ",".join(f"node{i + 1}" for i in range(nodes))
    layout = f"{tasks}(x{nodes})" if nodes > 1 else str(tasks)
    env = {"SLURM_JOB_ID": "4711", "SLURM_JOB_NAME": "my job", "SLURM_STEP_ID": "0",
           "SLURM_STEP_NODELIST": hosts, "SLURM_STEP_NUM_NODES": str(nodes),
           "SLURM_STEP_NUM_TASKS": str(nodes * tasks), "SLURM_STEP_TASKS_PER_NODE": layout,
           "SLURM_PROCID": str(rank), "SLURM_LOCALID": str(rank % tasks), "SLURM_NODEID": str(rank // tasks)}
    env.update(extra)
    return env


def test_the_folder_is_named_by_the_job_and_step_alike_in_every_task(tmp_path: Path) -> None:
    paths = {stepjob.step_dir(tmp_path, step_env(rank)) for rank in range(4)}
    assert paths == {tmp_path / "my_job-4711.0"}  # the job name made a safe folder name
    assert stepjob.step_dir(tmp_path, step_env(SLURM_STEP_ID="3")).name == "my_job-4711.3"
    assert stepjob.step_dir(tmp_path, step_env(SLURM_RESTART_COUNT="2")).name == "my_job-4711.0-r2"
    assert stepjob.step_dir(tmp_path, {**step_env(), "SLURM_JOB_NAME": ""}).name == "exec-4711.0"


@pytest.mark.parametrize(("env", "words"), [
    ({}, ["SLURM_JOB_ID is not set", "orch run train.py --nproc N"]),
    ({"SLURM_JOB_ID": "5"}, ["not in an srun step", "srun orch exec"]),
    ({"SLURM_JOB_ID": "5", "SLURM_STEP_ID": "batch"}, ["not in an srun step"]),
    ({"SLURM_JOB_ID": "5", "SLURM_STEP_ID": "4294967294"}, ["not in an srun step"]),
])
def test_outside_a_step_is_a_clear_error(env: dict[str, str], words: list[str]) -> None:
    with pytest.raises(ConfigError) as err:
        stepjob.slurm_step(env)
    text = err.value.render()
    assert all(word in text for word in words), text


def test_ids_that_are_not_slurms_never_reach_a_path(tmp_path: Path) -> None:
    with pytest.raises(DistEnvError, match="not Slurm ids"):
        stepjob.step_dir(tmp_path, step_env(SLURM_JOB_ID="../../etc"))


def test_job_json_comes_from_the_steps_variables() -> None:
    environ = step_env(3, SLURM_GPUS_ON_NODE="2", SLURM_CPUS_PER_TASK="6", SLURM_JOB_PARTITION="gpu")
    cfg = stepjob.build_step_config(TARGET, derive(environ), environ, job_dir=Path("/jobs/x"), now=NOW, cpus=64,
                                    cluster=None)
    assert (cfg.mode, cfg.nodes, cfg.tasks_per_node, cfg.world_size) == ("slurm", 2, 2, 4)
    assert (cfg.gpus_per_node, cfg.gpus_per_task, cfg.cpus_per_task) == (2, 1, 6)
    assert (cfg.job_name, cfg.partition, cfg.script) == ("my job", "gpu", TARGET)
    assert cfg.created == "2026-11-25T10:00:00+00:00" and cfg.job_dir == "/jobs/x"


@pytest.mark.parametrize(("extra", "gpus", "cpus"), [
    ({}, 0, 64),  # no GPUs, no --cpus-per-task: the CPUs this task may use
    ({"CUDA_VISIBLE_DEVICES": "0,1"}, 2, 64),
    ({"CUDA_VISIBLE_DEVICES": "3", "SLURM_GPUS_ON_NODE": "2"}, 2, 64),  # srun --gpus-per-task=1: the node's GPUs
    ({"CUDA_VISIBLE_DEVICES": "", "SLURM_CPUS_PER_TASK": "4"}, 0, 4),
])
def test_gpus_and_cpus_of_the_step(extra: dict[str, str], gpus: int, cpus: int) -> None:
    environ = step_env(**extra)
    cfg = stepjob.build_step_config(TARGET, derive(environ), environ, job_dir=Path("/j"), now=NOW, cpus=64,
                                    cluster=None)
    assert (cfg.gpus_per_node, cfg.cpus_per_task) == (gpus, cpus)


def test_unequal_tasks_per_node_are_refused() -> None:
    environ = {**step_env(), "SLURM_STEP_NUM_TASKS": "3", "SLURM_STEP_TASKS_PER_NODE": "2,1"}
    with pytest.raises(ConfigError, match="same number of tasks on every node") as err:
        stepjob.build_step_config(TARGET, derive(environ), environ, job_dir=Path("/j"), now=NOW, cpus=1, cluster=None)
    assert "--ntasks-per-node" in (err.value.hint or "")


def _config(job_dir: Path, created: datetime = NOW) -> RunConfig:
    environ = step_env()
    return stepjob.build_step_config(TARGET, derive(environ), environ, job_dir=job_dir, now=created, cpus=1,
                                     cluster=None)


def test_rank_0_creates_the_folder_once_and_the_others_read_it(tmp_path: Path) -> None:
    job_dir = tmp_path / "jobs" / "my_job-4711.0"
    cfg = _config(job_dir, datetime.now(timezone.utc))
    waited: list[RunConfig] = []
    waiter = threading.Thread(target=lambda: waited.append(
        stepjob.wait_for_step_folder(job_dir, timeout=20, started=time.time(), rank=1, poll=0.01)))
    waiter.start()
    time.sleep(0.2)  # rank 1 is waiting before rank 0 writes
    stepjob.create_step_folder(job_dir, cfg, "4711")
    waiter.join(20)
    assert waited == [cfg] == [read_run_config(job_dir)]
    assert (job_dir / "job_id").read_text() == "4711\n"
    assert (job_dir / "logs").is_dir() and (job_dir.stat().st_mode & 0o777) == 0o700
    with pytest.raises(ConfigError, match="already exists"):  # never a second time (a reused job id)
        stepjob.create_step_folder(job_dir, cfg, "4711")


def test_a_rank_waiting_for_a_rank_0_that_never_writes_gives_up_and_says_where_to_look(tmp_path: Path) -> None:
    began = time.monotonic()
    with pytest.raises(ConfigError) as err:
        stepjob.wait_for_step_folder(tmp_path / "missing", timeout=0.5, started=time.time(), rank=3, poll=0.05)
    assert time.monotonic() - began < 5
    text = err.value.render()
    assert "rank 3: rank 0 did not write" in text and "launcher.init_timeout" in text
    assert "task 0's output" in text


def test_an_earlier_jobs_folder_under_the_same_id_is_refused(tmp_path: Path) -> None:
    job_dir = tmp_path / "my_job-4711.0"
    stepjob.create_step_folder(job_dir, _config(job_dir, datetime.now(timezone.utc) - timedelta(days=3)), "4711")
    with pytest.raises(ConfigError, match="earlier job") as err:
        stepjob.wait_for_step_folder(job_dir, timeout=5, started=time.time(), rank=1)
    assert "--job-root" in (err.value.hint or "")
    data = json.loads((job_dir / "job.json").read_text())
    assert data["mode"] == "slurm"  # left as it was
