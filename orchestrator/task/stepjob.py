"""``orch exec``'s job folder: one per srun step of a hand-written batch script, from Slurm's variables alone.

Every task of ``srun orch exec SCRIPT`` starts at once, so the folder is named by what they all read alike:
``<job root>/<SLURM_JOB_NAME>-<SLURM_JOB_ID>.<SLURM_STEP_ID>`` (``-r<N>`` added after the N-th requeue:
a requeued job starts a fresh folder). Rank 0 (SLURM_PROCID 0) creates it and writes ``job_id`` and,
last, ``job.json`` (atomically: its presence means the folder is ready); every other task waits for that
``job.json`` (at most ``launcher.init_timeout`` seconds) and reads it. A ``job.json`` written long before
this task started is an older job's (Slurm's ids restart when a cluster is rebuilt): refused, never run.

The configuration is the step's: nodes ``SLURM_STEP_NUM_NODES``, tasks per node from
``SLURM_STEP_TASKS_PER_NODE`` (the same on every node), GPUs per node ``SLURM_GPUS_ON_NODE`` (else the
GPUs CUDA_VISIBLE_DEVICES shows), one GPU per task; the script as ``orch run`` would run it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from orchestrator.env import distenv
from orchestrator.env.devices import VISIBLE_VAR, parse_visible_devices
from orchestrator.errors import ConfigError, DistEnvError
from orchestrator.records.atomic import write_private
from orchestrator.records.jobcreate import create_job_dir, filling, write_config
from orchestrator.records.jobindex import parse_time
from orchestrator.records.joblayout import folder_name
from orchestrator.spec.cluster import Cluster, Launcher
from orchestrator.spec.numbers import parse_int
from orchestrator.spec.runconfig import JOB_FILE, JOB_ID_FILE, RunConfig, read_run_config
from orchestrator.spec.script import ScriptTarget
from orchestrator.spec.tracking import merge_tracking
from orchestrator.spec.umask import script_umask

GPUS_ON_NODE_VAR = "SLURM_GPUS_ON_NODE"
CPUS_PER_TASK_VAR = "SLURM_CPUS_PER_TASK"
JOB_NAME_VAR = "SLURM_JOB_NAME"
STALE_AFTER = 600.0  # seconds: a job.json created this long before a task started is another job's
POLL_SECONDS = 0.2
OUTSIDE_HINT = ("orch exec is for the srun line of your own batch script (srun orch exec train.py); on this "
                "machine use 'orch run train.py --nproc N', and 'orch submit train.py' writes the batch script for you")


def _first(environ: Mapping[str, str], key: str) -> str | None:
    for name in distenv.SLURM_VARS[key]:
        value = environ.get(name)
        if value is not None and value.strip():
            return value.strip()
    return None


def slurm_step(environ: Mapping[str, str]) -> tuple[str, str]:
    """(job id, step id) of the srun step this task is in; outside Slurm or in the batch script itself,
    a ConfigError saying where orch exec belongs."""
    job_id, step = _first(environ, "job_id"), _first(environ, "step_id")
    if job_id is None:
        raise ConfigError("orch exec runs inside a Slurm job step, and SLURM_JOB_ID is not set", hint=OUTSIDE_HINT)
    if step is None or step in distenv.NON_TASK_STEPS:
        raise ConfigError(f"orch exec is in Slurm job {job_id} but not in an srun step (it would be rank 0 "
                          "alone)", hint="start it with srun in the batch script: srun orch exec train.py")
    if not (job_id.isascii() and job_id.isdigit() and len(job_id) <= 18 and step.isascii() and step.isdigit()):
        raise DistEnvError(f"SLURM_JOB_ID={job_id[:40]!r} / SLURM_STEP_ID={step[:40]!r} are not Slurm ids",
                           hint="these come from Slurm; do not set them by hand")
    return job_id, step


def step_dir(root: Path, environ: Mapping[str, str]) -> Path:
    """This step's job folder under ``root`` (pure: the same path in every task of the step)."""
    job_id, step = slurm_step(environ)
    restarts = distenv.restart_count(environ)
    name = folder_name(environ.get(JOB_NAME_VAR) or "exec")
    return root / (f"{name}-{job_id}.{step}" + (f"-r{restarts}" if restarts else ""))


def step_gpus(environ: Mapping[str, str]) -> int:
    """GPUs on this node for the step: SLURM_GPUS_ON_NODE, else what CUDA_VISIBLE_DEVICES shows, else 0."""
    count = parse_int(environ.get(GPUS_ON_NODE_VAR), digits=6)
    if count is not None:
        return count
    ids = parse_visible_devices(environ.get(VISIBLE_VAR))
    return len(ids) if ids is not None else 0


def step_cpus(environ: Mapping[str, str], available: int) -> int:
    """CPUs of one task: SLURM_CPUS_PER_TASK when srun/sbatch set it, else the CPUs this task may run on."""
    count = parse_int(environ.get(CPUS_PER_TASK_VAR), digits=6)
    return max(1, count if count is not None else available)


def uniform_tasks_per_node(env: distenv.DistEnv, environ: Mapping[str, str]) -> int:
    """The step's tasks per node, which job.json holds as one number: the same on every node."""
    text = _first(environ, "tasks_per_node") or str(env.local_world_size)
    counts = set(distenv.parse_tasks_per_node(text))
    if len(counts) != 1 or env.world_size != env.num_nodes * env.local_world_size:
        raise ConfigError(f"the step runs {env.world_size} tasks on {env.num_nodes} node(s) as {text!r}: orch exec "
                          "needs the same number of tasks on every node",
                          hint="give srun (or #SBATCH) --ntasks-per-node=N with --nodes=M")
    return env.local_world_size


def build_step_config(target: ScriptTarget, env: distenv.DistEnv, environ: Mapping[str, str], *, job_dir: Path,
                      now: datetime, cpus: int, cluster: Cluster | None, tracking: Sequence[str] = (),
                      data_dir: str | None = None) -> RunConfig:
    """``job.json`` of this step (pure): what orch submit would have written for this allocation."""
    tasks = uniform_tasks_per_node(env, environ)
    gpus = step_gpus(environ)
    per_task = 1
    if target.launch.style == "per-node":  # the node's one task starts a process per GPU itself
        if tasks != 1:
            raise ConfigError(f"a per-node script runs one task per node, and this step has {tasks} per node",
                              hint="srun --ntasks-per-node=1 orch exec ... (or --launch env for a task per GPU)")
        per_task = max(gpus, 1)
        target = target.model_copy(update={"launch": target.launch.model_copy(update={"procs_per_task": per_task})})
    return RunConfig(
        mode="slurm", job_name=environ.get(JOB_NAME_VAR) or target.name, job_file=target.target, params={},
        script=target, nodes=env.num_nodes, gpus_per_node=gpus, tasks_per_node=tasks,
        gpus_per_task=per_task if gpus else 1,
        cpus_per_task=step_cpus(environ, cpus), partition=environ.get("SLURM_JOB_PARTITION") or None,
        data_dir=data_dir, job_dir=str(job_dir), cluster_name=cluster.name if cluster else None,
        launcher=cluster.launcher if cluster else Launcher(), env=dict(cluster.env) if cluster else {},
        created=now.isoformat(timespec="seconds"),
        tracking=merge_tracking(cluster.tracking if cluster else (), tracking),
        umask=script_umask(cluster.launcher.umask if cluster else None),
    )


def create_step_folder(job_dir: Path, cfg: RunConfig, job_id: str) -> None:
    """Rank 0: the new folder (never an existing one), ``job_id``, then ``job.json`` (the others wait for it)."""
    create_job_dir(job_dir)
    with filling(job_dir):
        write_private(job_dir / JOB_ID_FILE, job_id + "\n")
        write_config(job_dir, cfg)


def wait_for_step_folder(job_dir: Path, *, timeout: float, started: float, rank: int,
                         poll: float = POLL_SECONDS) -> RunConfig:
    """Every rank but 0: the ``job.json`` rank 0 writes, within ``timeout`` seconds of ``started``
    (``time.time()`` when this task began). One that is far older than this task is another job's."""
    deadline = started + timeout
    while not (job_dir / JOB_FILE).is_file():
        if time.time() >= deadline:
            raise ConfigError(
                f"rank {rank}: rank 0 did not write {job_dir / JOB_FILE} within {timeout:g} s "
                "(launcher.init_timeout)",
                hint="rank 0 stopped before it (its error is in task 0's output: the batch log unless srun "
                     "--output/--error send it elsewhere), or its node is slow: raise launcher.init_timeout")
        time.sleep(poll)
    cfg = read_run_config(job_dir)
    created = parse_time(cfg.created)
    if created is not None and created < started - STALE_AFTER:
        raise ConfigError(f"rank {rank}: {job_dir} holds the job.json of an earlier job (created {cfg.created}): "
                          "Slurm's job ids were reused",
                          hint="move the old folder away, or pass another --job-root")
    return cfg

