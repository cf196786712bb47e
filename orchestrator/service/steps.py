"""``srun orch exec SCRIPT`` (or ``-m MODULE``): one task of a hand-written batch script's srun step
(:class:`ExecRequest` -> :func:`prepare`, the step's folder and this task's rank, -> :func:`run_task`).

Each task derives its rank from Slurm's variables as orch's own tasks do (``distenv.derive``: MASTER_ADDR
the step's first node, MASTER_PORT from the job id, unless the batch script exported them), runs the doctor
gate (every task reaches the same verdict: a refused script stops every task with the same error), and
finds the step's job folder (:mod:`orchestrator.task.stepjob`: rank 0 creates it and records the submit, the
others wait for its job.json). Then the task process runs the script as ``orch run`` would (``python -m
orchestrator.runtime.launch --job-dir DIR``: the world check, outcome records, blame), its output copied to
the rank's log in the folder (:mod:`orchestrator.task.tee`).
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from orchestrator.env import distenv
from orchestrator.errors import ConfigError, SlurmError
from orchestrator.local.plan import available_cpus
from orchestrator.records.jobindex import Submitted, record_submit
from orchestrator.records.joblayout import job_root, log_path
from orchestrator.service.jobs import Scope, cluster_or_none
from orchestrator.service.runs import checked_tracking
from orchestrator.spec.cluster import Cluster, Launcher
from orchestrator.spec.datadir import resolve_data_dir
from orchestrator.spec.doctorcodes import parse_codes
from orchestrator.spec.runconfig import RunConfig
from orchestrator.spec.script import ScriptTarget, resolve_target
from orchestrator.task import stepjob, tee

log = logging.getLogger(__name__)
TASK_MODULE = "orchestrator.runtime.launch"
UNKNOWN_TIME = "Unknown"  # Slurm's word for a time it does not know: no time to compare (records/jobindex.py)


@dataclass(frozen=True)
class ExecRequest:
    """What ``orch exec`` was asked (its options by their names in :mod:`orchestrator.spec.options`)."""

    job: str | None = None
    module: str | None = None
    script_args: list[str] | None = None
    overrides: list[str] = field(default_factory=list)
    no_check: bool = False
    ignore: list[str] = field(default_factory=list)
    launch: str = "auto"
    track: list[str] = field(default_factory=list)
    data_dir: str | None = None
    job_root: str | None = None
    scope: Scope = field(default_factory=Scope)


@dataclass(frozen=True)
class Step:
    """This task's place in the step: the step's job folder, its job.json and the task's rank (``created``:
    this task, rank 0, created the folder)."""

    job_dir: Path
    cfg: RunConfig
    rank: int
    created: bool = False


def without_torchrun_vars(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment without a torchrun-style launcher's rank variables (the batch script's shell may have
    them; srun passes them on to every task): under orch exec, Slurm's variables say where a task is."""
    names = {name for names in distenv.TORCHRUN_VARS.values() for name in names}
    return {key: value for key, value in environ.items() if key not in names}


def check_in_step(environ: Mapping[str, str]) -> None:
    """Refused outside an srun step (ConfigError saying where orch exec belongs), before anything else."""
    stepjob.slurm_step(environ)


def _target(request: ExecRequest) -> ScriptTarget:
    target = resolve_target(request.job, request.module, request.script_args, request.overrides, Path.cwd(),
                            [Path(p) for p in sys.path if p])
    if target is None:
        raise ConfigError(f"orch exec runs a torchrun-style script, and {request.job or 'nothing'} is not one"
                          + (" (it is a job file)" if request.job else ""),
                          hint="orch exec train.py [-- ARGS] or orch exec -m package.module; a job file: "
                               "orch submit JOB")
    return target


def _gate(target: ScriptTarget, request: ExecRequest, cluster: Cluster | None, rank: int,
          nodes: int) -> ScriptTarget:
    """orch doctor, in every task (the same verdict everywhere; only rank 0 prints the findings), and the
    script's launch style (read from it, or --launch). --no-check: only rank 0 reads the style (no verdict to
    share; the other tasks read it from the job.json rank 0 writes)."""
    from orchestrator.doctor.gate import check_script
    from orchestrator.spec.launch import check_style

    launch = check_style(request.launch, script=True)
    if rank and request.no_check:
        return target
    ignore = parse_codes([*request.ignore, *(cluster.doctor.ignore if cluster is not None else ())], "--ignore")
    quiet = contextlib.redirect_stderr(io.StringIO()) if rank else contextlib.nullcontext()
    with quiet:
        _, style = check_script(target, refuse=not request.no_check, ignore=ignore, launch=launch, nodes=nodes)
    from orchestrator.doctor.frameworks import script_frameworks

    return target.model_copy(update={"launch": style, "frameworks": script_frameworks(target)})


def _submitted_record(job_id: str, job_dir: Path, cfg: RunConfig) -> Submitted:
    """What orch status compares with Slurm's job of this id: the job name and Slurm's own SubmitTime
    (asked once, by rank 0; unknown when squeue does not answer: then only the name is compared)."""
    from orchestrator.slurm import queries as slurm

    submitted = UNKNOWN_TIME
    try:
        found = slurm.squeue([job_id]).get(job_id)
        if found is not None and found.submit_time:
            submitted = found.submit_time
    except SlurmError as exc:
        log.info("squeue did not answer for job %s: %s", job_id, exc.message)
    return Submitted(job_id=job_id, job_dir=str(job_dir), submitted=submitted, job_name=cfg.job_name,
                     cluster=cfg.cluster_name)


def head_address(environ: dict[str, str]) -> None:
    """MASTER_ADDR, unless the batch script exported it: the step's first node when its name resolves here,
    else its NodeAddr from slurmctld (node names need not resolve: test clusters), as orch's own batch
    script takes it. Set in ``environ`` (this task's derivation and the task process both read it)."""
    if environ.get("MASTER_ADDR", "").strip():
        return
    import socket

    from orchestrator.env.hostlist import HostlistError, expand_cached

    nodelist = next((environ[name] for name in distenv.SLURM_VARS["nodelist"] if environ.get(name)), "")
    try:
        hosts = expand_cached(nodelist)
    except HostlistError:
        return  # derive() says what is wrong with it
    if not hosts:
        return
    try:
        socket.getaddrinfo(hosts[0], None)
        return
    except (OSError, UnicodeError):
        from orchestrator.slurm.restart import node_addr  # the one NodeAddr lookup (the batch script's restarts)

        environ["MASTER_ADDR"] = node_addr(hosts[0])


def prepare(request: ExecRequest, environ: Mapping[str, str], started: float) -> Step:
    """The step's job folder, its job.json and this task's rank (rank 0 creates the folder)."""
    from orchestrator.records.codetrust import check_launch

    job_id, _ = stepjob.slurm_step(environ)
    cluster = cluster_or_none(request.scope)
    launcher = cluster.launcher if cluster is not None else Launcher()
    env = distenv.derive(environ, port_range=launcher.port_range)
    stepjob.uniform_tasks_per_node(env, environ)  # in every task: none waits for a folder rank 0 refuses to make
    target = _target(request)
    check_launch(request.job, target, environ=environ, cwd=Path.cwd())  # code others could write never runs
    target = _gate(target, request, cluster, env.rank, env.num_nodes)
    root = Path(request.job_root).expanduser().absolute() if request.job_root else job_root(cluster).absolute()
    job_dir = stepjob.step_dir(root, environ)
    if env.rank != 0:
        cfg = stepjob.wait_for_step_folder(job_dir, timeout=launcher.init_timeout, started=started, rank=env.rank)
        return Step(job_dir, cfg, env.rank)
    cfg = stepjob.build_step_config(target, env, environ, job_dir=job_dir, now=datetime.now(timezone.utc),
                                    cpus=available_cpus(), cluster=cluster,
                                    tracking=checked_tracking(cluster, request.track),
                                    data_dir=resolve_data_dir(request.data_dir, environ, Path.cwd()))
    stepjob.create_step_folder(job_dir, cfg, job_id)
    record_submit(job_dir, _submitted_record(job_id, job_dir, cfg))
    return Step(job_dir, cfg, env.rank, created=True)


def run_task(step: Step, environ: Mapping[str, str]) -> int:
    """The task process (as the batch script starts it), its output teed to the rank's log; its exit status
    as the task's own (a signal's death passed on as one)."""
    job_id, _ = stepjob.slurm_step(environ)
    argv = [sys.executable, "-m", TASK_MODULE, "--job-dir", str(step.job_dir)]  # as the batch script starts it
    status = tee.run_teed(argv, environ, log_path(step.job_dir, job_id, step.rank),
                          ignore=tee.ignored_signals(step.cfg.launcher.preempt_signal))
    return tee.end_like(status)
