"""``orch run JOB --nproc N [key=value ...]``: run a job on this machine, through the same launcher.

The job folder has the same layout as a Slurm job's (``job.json`` with ``mode: local``, logs in
``logs/local-rank<R>.out``). It is created under ``--job-root``, else ``launcher.job_root`` of
cluster.yaml when one is found (``--cluster``, ``$ORCH_CLUSTER``, ``./cluster.yaml``; its ``env``
and ``launcher`` settings apply too), else the default job root ``~/orch-jobs`` (so ``orch list``
finds local and Slurm runs in one place). ``--resume DIR`` continues a job folder from its last
checkpoint (after a preemption, a failure or Ctrl-C); overrides then change its parameters.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import TextIO

from orchestrator.commands._common import add_options, check_launcher_flags, print_json, scope
from orchestrator.doctor.frameworks import script_frameworks
from orchestrator.doctor.gate import check_script
from orchestrator.errors import ConfigError
from orchestrator.local.plan import (
    available_cpus,
    check_nproc,
    check_resumed,
    cpus_per_rank,
    local_gpu_layout,
    local_gpus,
    new_local_run,
)
from orchestrator.local.runner import LocalResult, LocalRunner, job_lock, last_error, tail
from orchestrator.records.codetrust import check_launch
from orchestrator.records.jobdirs import job_root, local_log_name, write_run_config
from orchestrator.records.restarts.world import WorldVerdict, judge
from orchestrator.records.resumecheck import check_resume_folder
from orchestrator.records.training import metrics_cell
from orchestrator.records.trust import check_job_dir
from orchestrator.service.jobs import cluster_or_none
from orchestrator.spec.cluster import Cluster, resolve_data_dir
from orchestrator.spec.doctorcodes import parse_codes
from orchestrator.spec.extras import parse_pass_env
from orchestrator.spec.job import load_job, load_job_file, make_params, parse_overrides
from orchestrator.spec.launch import check_style
from orchestrator.spec.options import RUN
from orchestrator.spec.runconfig import CHECKPOINT_DIR, JOB_FILE, LOG_DIR, RunConfig, read_run_config
from orchestrator.spec.script import ScriptTarget, resolve_target, script_job
from orchestrator.spec.tracking import TRACKERS, TrackerName, merge_tracking, missing_extra
from orchestrator.task.hang import for_terminal
from orchestrator.task.outcome import read_outcomes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, RUN)  # the one table: orchestrator/spec/options.py


def checked_tracking(cluster: Cluster | None, args: argparse.Namespace) -> list[TrackerName]:
    """--track on top of cluster.yaml's tracking; a tracker whose package this python lacks is refused now."""
    import importlib.util

    names = merge_tracking(cluster.tracking if cluster is not None else (), args.track)
    for name in names:
        if importlib.util.find_spec(TRACKERS[name][0]) is None:
            raise missing_extra(name)
    return names


def _new_script_run(args: argparse.Namespace, target: ScriptTarget) -> tuple[Path, RunConfig]:
    """``orch run train.py --nproc N -- ARGS``: the script in N local ranks, as torchrun would run it."""
    if target.note() is not None:  # a local run needs the module here (a submit may find it on the nodes)
        raise ConfigError(target.note() or "", hint="check the name and run orch from the folder that holds the "
                                                    "package (or put it on PYTHONPATH)")
    cluster = cluster_or_none(scope(args))
    ignore = parse_codes([*args.ignore, *(cluster.doctor.ignore if cluster is not None else ())], "--ignore")
    _, style = check_script(target, refuse=not args.no_check, ignore=ignore,  # orch doctor first: errors stop it
                            launch=check_style(args.launch, script=True), gpus_per_task=args.gpus_per_task)
    target = target.model_copy(update={"launch": style, "frameworks": script_frameworks(target)})
    root = Path(args.job_root).expanduser().absolute() if args.job_root else job_root(cluster).absolute()
    per_task, gpus, nproc = args.gpus_per_task, 0, args.nproc or 1
    if per_task is not None:
        gpus = 0 if args.cpu else local_gpus(os.environ)
        nproc = local_gpu_layout(args.nproc, per_task, gpus)
    return new_local_run(script_job(target), {}, nproc=nproc, root=root,
                         data_dir=resolve_data_dir(args.data_dir, os.environ, Path.cwd()), cluster=cluster,
                         script=target, gpus_per_task=per_task, gpus=gpus, tracking=checked_tracking(cluster, args))


def _new_run(args: argparse.Namespace) -> tuple[Path, RunConfig]:
    target = resolve_target(args.job, getattr(args, "module", None), getattr(args, "script_args", None),
                            args.overrides, Path.cwd(),
                            [Path(p) for p in sys.path if p])
    cwd = Path.cwd()
    if target is not None or args.job:
        check_launch(args.job, target, environ=os.environ, cwd=cwd)  # code others could write never runs
    if target is not None:
        if args.download:
            raise ConfigError("--download fetches a job's data (orch run mnist --download); a script gets its own",
                              hint="leave out --download")
        return _new_script_run(args, target)
    if not args.job:
        raise ConfigError("orch run needs a JOB (or --resume DIR)", hint="e.g. orch run smoke --nproc 2")
    check_style(args.launch, script=False)
    loaded = load_job(args.job, os.environ, cwd)
    cluster = cluster_or_none(scope(args))
    root = Path(args.job_root).expanduser().absolute() if args.job_root else job_root(cluster).absolute()
    data_dir = resolve_data_dir(args.data_dir, os.environ, cwd)
    if args.download:  # before the job folder exists: offline, nothing is left behind
        from orchestrator.local.download import download_dir, fetch_data

        out = sys.stderr if args.json else sys.stdout
        data_dir = str(fetch_data(loaded, download_dir(data_dir, os.environ), out))
    return new_local_run(loaded, parse_overrides(args.overrides), nproc=args.nproc or 1, root=root,
                         data_dir=data_dir, cluster=cluster,
                         gpus_per_task=args.gpus_per_task, tracking=checked_tracking(cluster, args))


def _resume(args: argparse.Namespace, stack: contextlib.ExitStack) -> tuple[Path, RunConfig]:
    overrides = list(args.overrides)
    if args.job:  # `orch run --resume DIR epochs=3`: the first override landed in JOB
        if "=" not in args.job:
            raise ConfigError(f"--resume takes no JOB (got {args.job!r}): the job comes from the folder's "
                              "job.json", hint="orch run --resume DIR [key=value ...]")
        overrides.insert(0, args.job)
    if getattr(args, "script_args", None) is not None or getattr(args, "module", None) or args.gpus_per_task or (
            args.launch != "auto") or args.download:
        raise ConfigError("--resume takes no script, -m, --gpus-per-task, --launch, --download or arguments after --: "
                          "they come from the "
                          "folder's job.json",
                          hint="orch run --resume DIR")
    job_dir = Path(args.resume).expanduser().absolute()
    check_job_dir(job_dir, job_file=JOB_FILE, checkpoint_dir=CHECKPOINT_DIR)
    cfg = read_run_config(job_dir)
    stack.enter_context(job_lock(job_dir))  # before job.json changes: one resume of a folder at a time
    if cfg.mode != "local":
        raise ConfigError(f"{job_dir} is a Slurm job folder", hint="requeue or resubmit it with Slurm; "
                          "orch run --resume continues local runs")
    if not args.nproc:  # --nproc replaces job.json's ranks (checked before anything was read)
        check_resumed(cfg, job_dir / JOB_FILE)
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
    if args.nproc and args.nproc != cfg.tasks_per_node:
        changes.update(tasks_per_node=args.nproc, cpus_per_task=cpus_per_rank(available_cpus(), args.nproc))
    if args.data_dir:
        changes["data_dir"] = resolve_data_dir(args.data_dir, os.environ, Path.cwd())
    if changes:
        cfg = RunConfig.model_validate({**cfg.model_dump(), **changes})
    check_resume_folder(job_dir, cfg)  # the checkpoint is this job's (its sidecar), before job.json changes
    if changes:
        write_run_config(job_dir, cfg)
    return job_dir, cfg


def run(args: argparse.Namespace) -> int:
    if args.nproc is not None:
        check_nproc(args.nproc)  # before anything is read, written or started
    check_launcher_flags(args)
    missing = [name for name in parse_pass_env(args.pass_env) if name not in os.environ]
    if missing:  # the local ranks inherit this environment: a name must be set in it
        raise ConfigError(f"--pass-env: {', '.join(missing)} not set in this shell",
                          hint=f"export {missing[0]}=... before orch run")
    with contextlib.ExitStack() as stack:
        if args.resume:
            job_dir, cfg = _resume(args, stack)
        else:
            job_dir, cfg = _new_run(args)
            stack.enter_context(job_lock(job_dir))
        return _run_locked(args, job_dir, cfg)


def _run_locked(args: argparse.Namespace, job_dir: Path, cfg: RunConfig) -> int:
    out = sys.stderr if args.json else sys.stdout
    launch = cfg.script.launch if cfg.script is not None else None
    spawned = (f" (a per-node script: it starts {launch.procs_per_task} rank(s) itself)"
               if launch is not None and launch.style == "per-node" else "")
    print(f"orch: {cfg.job_name}: {cfg.tasks_per_node} local process(es){spawned}; job folder {job_dir}",
          file=out, flush=True)
    from orchestrator.local.restarts import run_attempts

    asked = {"max_restarts": args.max_restarts, "world_check": args.world_check,
             "collective_timeout": args.collective_timeout}
    changed = {k: v for k, v in asked.items() if v is not None and v != getattr(cfg.launcher, k)}
    if changed:
        cfg = RunConfig.model_validate({**cfg.model_dump(), "launcher": {**cfg.launcher.model_dump(), **changed}})
        write_run_config(job_dir, cfg)
    base = {"CUDA_VISIBLE_DEVICES": ""} if args.cpu else {}
    result = run_attempts(lambda extra: LocalRunner(
        job_dir=job_dir, nproc=cfg.tasks_per_node, preempt_signal=cfg.launcher.preempt_signal, echo=out,
        all_ranks=args.all_ranks, extra_env={**base, **extra}), job_dir, cfg, out=out)
    world = _world(result, job_dir, cfg)
    if args.json:
        print_json({**result.summary(), "world": world.as_dict() if world is not None else None})
    _report(result, job_dir, out)
    if world is not None:
        print(f"orch: warning: {world.message}\nHINT: {world.hint}", file=sys.stderr, flush=True)
    return result.exit_code


def _world(result: LocalResult, job_dir: Path, cfg: RunConfig) -> WorldVerdict | None:
    """The world check of a run that ended well (a failure says its own cause): its ranks' records."""
    if result.status not in ("completed", "preempted"):
        return None
    records, _ = read_outcomes(job_dir)
    return judge(records, cfg.world_size, run="local")


def said_once(message: str, shown: str) -> str:
    """The run's error line without the failed rank's own error when the output above showed it already
    (its ``orch: error:`` line, in rank 0's output or in the failed rank's last lines): said once."""
    said = last_error(shown)
    return message.replace(f" ({said})", " (its error is above)", 1) if said else message


def _report(result: LocalResult, job_dir: Path, out: TextIO) -> None:
    if result.status == "failed" and result.failed_rank is not None:
        log = job_dir / LOG_DIR / local_log_name(result.failed_rank)
        lines = for_terminal(tail(log))  # a stuck rank's stack without orch's launcher frames (the log has all)
        if lines and result.failed_rank != 0:  # rank 0's output was already shown
            print(f"--- last lines of {log} ---\n{lines}\n---", file=sys.stderr)
        # the cause once on stderr: left out of the closing line only when stderr showed it just above (the
        # failed rank's last lines, or rank 0's own output under --json); rank 0's output on stdout does not
        # count, so `orch run ... 2>err` still keeps it
        above = result.failed_rank != 0 or out is sys.stderr
        message = said_once(result.message, lines) if above else result.message
        print(f"orch: error: {message}\nHINT: full log: {log}", file=sys.stderr, flush=True)
    elif result.status == "completed":
        final = (result.result or {}).get("final") or {}
        acc = final.get("test_acc")
        detail = f"; test accuracy {acc * 100:.2f}%" if isinstance(acc, (int, float)) else ""
        if not detail and isinstance(final.get("metrics"), list) and final["metrics"]:
            detail = f"; {metrics_cell(final)}"  # the task's own metrics, by name
        print(f"orch: completed{detail}; results in {job_dir}", file=out, flush=True)
    else:
        print(f"orch: {result.message}", file=out if result.status == "preempted" else sys.stderr, flush=True)
