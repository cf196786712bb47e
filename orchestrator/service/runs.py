"""``orch run``: a run of a job or a script on this machine, through the same launcher (:class:`RunRequest` ->
:func:`opened`, the job folder new or resumed and locked, -> :func:`run_local`, its :class:`RunOutcome`).

The job folder has the same layout as a Slurm job's (``job.json`` with ``mode: local``, logs in
``logs/local-rank<R>.out``). It is created under ``job_root``, else ``launcher.job_root`` of the cluster file in
use, else the default job root. A resumed folder continues from its last checkpoint; overrides then change its
parameters. The ranks' own output (and a ``--download``'s progress) goes to the ``out`` stream the caller names;
the closing report is the caller's, from the outcome.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from orchestrator.doctor.frameworks import script_frameworks
from orchestrator.doctor.gate import check_script
from orchestrator.errors import ConfigError
from orchestrator.local import plan as local_plan
from orchestrator.local.joblock import job_lock
from orchestrator.local.result import last_error, tail
from orchestrator.local.runner import LocalRunner
from orchestrator.records.codetrust import check_launch
from orchestrator.records.jobcreate import write_run_config
from orchestrator.records.joblayout import job_root, local_log_name
from orchestrator.records.restarts.world import WorldVerdict, judge
from orchestrator.records.resumecheck import check_resume_folder
from orchestrator.records.training import metrics_cell
from orchestrator.records.trust import check_job_dir
from orchestrator.service.jobs import Scope, cluster_or_none
from orchestrator.spec.cluster import Cluster
from orchestrator.spec.datadir import resolve_data_dir
from orchestrator.spec.doctorcodes import parse_codes
from orchestrator.spec.extras import parse_pass_env
from orchestrator.spec.job import load_job, load_job_file, make_params, parse_overrides
from orchestrator.spec.launch import check_style
from orchestrator.spec.runconfig import CHECKPOINT_DIR, JOB_FILE, LOG_DIR, RunConfig, read_run_config
from orchestrator.spec.script import ScriptTarget, resolve_target, script_job
from orchestrator.spec.tracking import TRACKERS, TrackerName, merge_tracking, missing_extra
from orchestrator.task.forkserver import forks_ranks
from orchestrator.task.hang import for_terminal
from orchestrator.task.outcome import read_outcomes


@dataclass(frozen=True)
class RunRequest:
    """What ``orch run`` was asked (its options by their names in :mod:`orchestrator.spec.options`)."""

    job: str | None = None
    module: str | None = None
    script_args: list[str] | None = None
    overrides: list[str] = field(default_factory=list)
    nproc: int | None = None
    gpus_per_task: int | None = None
    cpu: bool = False
    launch: str = "auto"
    no_check: bool = False
    ignore: list[str] = field(default_factory=list)
    track: list[str] = field(default_factory=list)
    data_dir: str | None = None
    job_root: str | None = None
    scope: Scope = field(default_factory=Scope)
    download: bool = False
    resume: str | None = None
    pass_env: list[str] = field(default_factory=list)
    max_restarts: int | None = None
    world_check: str | None = None
    collective_timeout: int | None = None
    all_ranks: bool = False


@dataclass(frozen=True)
class RunOutcome:
    """How a local run ended, and what its report shows: ``summary`` is ``--json``'s object (less ``world``);
    a failed rank's log and its last lines (``message_once``: the message without the rank's own error when
    those lines show it); a completed run's final metrics; the world check of a run that ended well."""

    job_dir: Path
    status: str  # completed | failed | preempted | interrupted
    exit_code: int
    message: str
    summary: dict[str, Any]
    world: WorldVerdict | None = None
    failed_rank: int | None = None
    failed_log: Path | None = None
    last_lines: str = ""
    message_once: str = ""
    final: dict[str, Any] = field(default_factory=dict)
    metrics: str | None = None  # the task's own metrics by name (metrics_cell), when it names a list of them


def checked_tracking(cluster: Cluster | None, track: Sequence[str]) -> list[TrackerName]:
    """--track on top of cluster.yaml's tracking; a tracker whose package this python lacks is refused now."""
    names = merge_tracking(cluster.tracking if cluster is not None else (), list(track))
    for name in names:
        if importlib.util.find_spec(TRACKERS[name][0]) is None:
            raise missing_extra(name)
    return names


def check_nproc(nproc: int | None) -> None:
    """--nproc within what this machine can run, before anything is read, written or started."""
    if nproc is not None:
        local_plan.check_nproc(nproc)


def _root(request: RunRequest, cluster: Cluster | None) -> Path:
    return Path(request.job_root).expanduser().absolute() if request.job_root else job_root(cluster).absolute()


def _new_script_run(request: RunRequest, target: ScriptTarget) -> tuple[Path, RunConfig]:
    """``orch run train.py --nproc N -- ARGS``: the script in N local ranks, as torchrun would run it."""
    if target.note() is not None:  # a local run needs the module here (a submit may find it on the nodes)
        raise ConfigError(target.note() or "", hint="check the name and run orch from the folder that holds the "
                                                    "package (or put it on PYTHONPATH)")
    cluster = cluster_or_none(request.scope)
    ignore = parse_codes([*request.ignore, *(cluster.doctor.ignore if cluster is not None else ())], "--ignore")
    _, style = check_script(target, refuse=not request.no_check, ignore=ignore,  # orch doctor first: errors stop it
                            launch=check_style(request.launch, script=True), gpus_per_task=request.gpus_per_task)
    target = target.model_copy(update={"launch": style, "frameworks": script_frameworks(target)})
    root = _root(request, cluster)
    per_task, gpus, nproc = request.gpus_per_task, 0, request.nproc or 1
    if per_task is not None:
        gpus = 0 if request.cpu else local_plan.local_gpus(os.environ)
        nproc = local_plan.local_gpu_layout(request.nproc, per_task, gpus)
    return local_plan.new_local_run(script_job(target), {}, nproc=nproc, root=root,
                                    data_dir=resolve_data_dir(request.data_dir, os.environ, Path.cwd()),
                                    cluster=cluster, script=target, gpus_per_task=per_task, gpus=gpus,
                                    tracking=checked_tracking(cluster, request.track))


def _new_run(request: RunRequest, out: TextIO) -> tuple[Path, RunConfig]:
    target = resolve_target(request.job, request.module, request.script_args, request.overrides, Path.cwd(),
                            [Path(p) for p in sys.path if p])
    cwd = Path.cwd()
    if target is not None or request.job:
        check_launch(request.job, target, environ=os.environ, cwd=cwd)  # code others could write never runs
    if target is not None:
        if request.download:
            raise ConfigError("--download fetches a job's data (orch run mnist --download); a script gets its own",
                              hint="leave out --download")
        return _new_script_run(request, target)
    if not request.job:
        raise ConfigError("orch run needs a JOB (or --resume DIR)", hint="e.g. orch run smoke --nproc 2")
    check_style(request.launch, script=False)
    loaded = load_job(request.job, os.environ, cwd)
    cluster = cluster_or_none(request.scope)
    root = _root(request, cluster)
    data_dir = resolve_data_dir(request.data_dir, os.environ, cwd)
    if request.download:  # before the job folder exists: offline, nothing is left behind
        from orchestrator.local.download import download_dir, fetch_data

        data_dir = str(fetch_data(loaded, download_dir(data_dir, os.environ), out))
    return local_plan.new_local_run(loaded, parse_overrides(request.overrides), nproc=request.nproc or 1,
                                    root=root, data_dir=data_dir, cluster=cluster,
                                    gpus_per_task=request.gpus_per_task,
                                    tracking=checked_tracking(cluster, request.track))


def _resume(request: RunRequest, stack: contextlib.ExitStack[Any]) -> tuple[Path, RunConfig]:
    assert request.resume is not None
    overrides = list(request.overrides)
    if request.job:  # `orch run --resume DIR epochs=3`: the first override landed in JOB
        if "=" not in request.job:
            raise ConfigError(f"--resume takes no JOB (got {request.job!r}): the job comes from the folder's "
                              "job.json", hint="orch run --resume DIR [key=value ...]")
        overrides.insert(0, request.job)
    if request.script_args is not None or request.module or request.gpus_per_task or (
            request.launch != "auto") or request.download:
        raise ConfigError("--resume takes no script, -m, --gpus-per-task, --launch, --download or arguments after --: "
                          "they come from the "
                          "folder's job.json",
                          hint="orch run --resume DIR")
    job_dir = Path(request.resume).expanduser().absolute()
    check_job_dir(job_dir, job_file=JOB_FILE, checkpoint_dir=CHECKPOINT_DIR)
    cfg = read_run_config(job_dir)
    stack.enter_context(job_lock(job_dir))  # before job.json changes: one resume of a folder at a time
    if cfg.mode != "local":
        raise ConfigError(f"{job_dir} is a Slurm job folder", hint="requeue or resubmit it with Slurm; "
                          "orch run --resume continues local runs")
    if not request.nproc:  # --nproc replaces job.json's ranks (checked before anything was read)
        local_plan.check_resumed(cfg, job_dir / JOB_FILE)
    changes: dict[str, object] = {}
    if cfg.script is not None:  # a script sees TORCHELASTIC_RESTART_COUNT one higher
        if overrides:
            raise ConfigError(f"{cfg.job_name} is a script: it takes no key=value overrides",
                              hint="its arguments were fixed when the run started")
        changes["restarts"] = cfg.restarts + 1
    else:
        spec = load_job_file(Path(cfg.job_file))
        # job.json's params as every rank will check them (a hand edit is caught here, before any rank starts)
        params = make_params(spec, {**cfg.params, **parse_overrides(overrides)}).model_dump(mode="json")
        if overrides:
            changes["params"] = params
    if request.nproc and request.nproc != cfg.tasks_per_node:
        changes.update(tasks_per_node=request.nproc,
                       cpus_per_task=local_plan.cpus_per_rank(local_plan.available_cpus(), request.nproc))
    if request.data_dir:
        changes["data_dir"] = resolve_data_dir(request.data_dir, os.environ, Path.cwd())
    if changes:
        cfg = RunConfig.model_validate({**cfg.model_dump(), **changes})
    check_resume_folder(job_dir, cfg)  # the checkpoint is this job's (its sidecar), before job.json changes
    if changes:
        write_run_config(job_dir, cfg)
    return job_dir, cfg


@contextlib.contextmanager
def opened(request: RunRequest, out: TextIO) -> Iterator[tuple[Path, RunConfig]]:
    """The run's job folder and job.json (new, or resumed with its changes written), locked while the caller
    runs it: one run of a folder at a time. ``out``: where a ``--download`` shows its progress."""
    missing = [name for name in parse_pass_env(request.pass_env) if name not in os.environ]
    if missing:  # the local ranks inherit this environment: a name must be set in it
        raise ConfigError(f"--pass-env: {', '.join(missing)} not set in this shell",
                          hint=f"export {missing[0]}=... before orch run")
    with contextlib.ExitStack() as stack:
        if request.resume:
            job_dir, cfg = _resume(request, stack)
        else:
            job_dir, cfg = _new_run(request, out)
            stack.enter_context(job_lock(job_dir))
        yield job_dir, cfg


def run_local(request: RunRequest, job_dir: Path, cfg: RunConfig, out: TextIO) -> RunOutcome:
    """Run an opened folder's ranks (restarts as its launcher settings say; the flags given replace them in
    job.json), rank 0's output (every rank's under ``all_ranks``) shown on ``out``; how it ended."""
    from orchestrator.local.restarts import run_attempts

    asked = {"max_restarts": request.max_restarts, "world_check": request.world_check,
             "collective_timeout": request.collective_timeout}
    changed = {k: v for k, v in asked.items() if v is not None and v != getattr(cfg.launcher, k)}
    if changed:
        cfg = RunConfig.model_validate({**cfg.model_dump(), "launcher": {**cfg.launcher.model_dump(), **changed}})
        write_run_config(job_dir, cfg)
    base = {"CUDA_VISIBLE_DEVICES": ""} if request.cpu else {}
    fork = forks_ranks(script=cfg.script is not None, nproc=cfg.tasks_per_node, environ=os.environ)
    result = run_attempts(lambda extra: LocalRunner(
        job_dir=job_dir, nproc=cfg.tasks_per_node, preempt_signal=cfg.launcher.preempt_signal, echo=out,
        all_ranks=request.all_ranks, extra_env={**base, **extra}, fork=fork), job_dir, cfg, out=out)
    outcome = RunOutcome(job_dir=job_dir, status=result.status, exit_code=result.exit_code, message=result.message,
                         summary=result.summary(), world=_world(result.status, job_dir, cfg),
                         failed_rank=result.failed_rank)
    if result.status == "failed" and result.failed_rank is not None:
        log = job_dir / LOG_DIR / local_log_name(result.failed_rank)
        lines = for_terminal(tail(log))  # a stuck rank's stack without orch's launcher frames (the log has all)
        return replace(outcome, failed_log=log, last_lines=lines, message_once=said_once(result.message, lines))
    if result.status == "completed":
        final = (result.result or {}).get("final") or {}
        listed = isinstance(final.get("metrics"), list) and final["metrics"]
        metrics = str(metrics_cell(final)) if listed else None  # as orch run has shown it ("None": no value)
        return replace(outcome, final=final, metrics=metrics)
    return outcome


def _world(status: str, job_dir: Path, cfg: RunConfig) -> WorldVerdict | None:
    """The world check of a run that ended well (a failure says its own cause): its ranks' records."""
    if status not in ("completed", "preempted"):
        return None
    records, _ = read_outcomes(job_dir)
    return judge(records, cfg.world_size, run="local")


def said_once(message: str, shown: str) -> str:
    """The run's error line without the failed rank's own error when the output above showed it already
    (its ``orch: error:`` line, in rank 0's output or in the failed rank's last lines): said once."""
    said = last_error(shown)
    return message.replace(f" ({said})", " (its error is above)", 1) if said else message
