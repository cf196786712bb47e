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
import sys
from typing import TextIO

from orchestrator.commands._common import add_options, check_launcher_flags, print_json, scope
from orchestrator.service import runs
from orchestrator.service.runs import RunOutcome, RunRequest
from orchestrator.spec.options import RUN


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, RUN)  # the one table: orchestrator/spec/options.py


def request_of(args: argparse.Namespace) -> RunRequest:
    """orch run's parsed options as the service takes them."""
    return RunRequest(job=args.job, module=getattr(args, "module", None),
                      script_args=getattr(args, "script_args", None), overrides=list(args.overrides),
                      nproc=args.nproc, gpus_per_task=args.gpus_per_task, cpu=args.cpu, launch=args.launch,
                      no_check=args.no_check, ignore=list(args.ignore), track=list(args.track or ()),
                      data_dir=args.data_dir, job_root=args.job_root, scope=scope(args), download=args.download,
                      resume=args.resume, pass_env=list(args.pass_env), max_restarts=args.max_restarts,
                      world_check=args.world_check, collective_timeout=args.collective_timeout,
                      all_ranks=args.all_ranks)


def run(args: argparse.Namespace) -> int:
    runs.check_nproc(args.nproc)  # before anything is read, written or started
    check_launcher_flags(args)
    request = request_of(args)
    out = sys.stderr if args.json else sys.stdout
    with runs.opened(request, out) as (job_dir, cfg):
        launch = cfg.script.launch if cfg.script is not None else None
        spawned = (f" (a per-node script: it starts {launch.procs_per_task} rank(s) itself)"
                   if launch is not None and launch.style == "per-node" else "")
        print(f"orch: {cfg.job_name}: {cfg.tasks_per_node} local process(es){spawned}; job folder {job_dir}",
              file=out, flush=True)
        outcome = runs.run_local(request, job_dir, cfg, out)
        world = outcome.world
        if args.json:
            print_json({**outcome.summary, "world": world.as_dict() if world is not None else None})
        _report(outcome, out)
        if world is not None:
            print(f"orch: warning: {world.message}\nHINT: {world.hint}", file=sys.stderr, flush=True)
        return outcome.exit_code


def _report(outcome: RunOutcome, out: TextIO) -> None:
    if outcome.status == "failed" and outcome.failed_rank is not None:
        lines = outcome.last_lines
        if lines and outcome.failed_rank != 0:  # rank 0's output was already shown
            print(f"--- last lines of {outcome.failed_log} ---\n{lines}\n---", file=sys.stderr)
        # the cause once on stderr: left out of the closing line only when stderr showed it just above (the
        # failed rank's last lines, or rank 0's own output under --json); rank 0's output on stdout does not
        # count, so `orch run ... 2>err` still keeps it
        above = outcome.failed_rank != 0 or out is sys.stderr
        message = outcome.message_once if above else outcome.message
        print(f"orch: error: {message}\nHINT: full log: {outcome.failed_log}", file=sys.stderr, flush=True)
    elif outcome.status == "completed":
        acc = outcome.final.get("test_acc")
        detail = f"; test accuracy {acc * 100:.2f}%" if isinstance(acc, (int, float)) else ""
        if not detail and outcome.metrics is not None:
            detail = f"; {outcome.metrics}"  # the task's own metrics, by name
        print(f"orch: completed{detail}; results in {outcome.job_dir}", file=out, flush=True)
    else:
        print(f"orch: {outcome.message}", file=out if outcome.status == "preempted" else sys.stderr, flush=True)
