"""``srun orch exec SCRIPT [-- ARGS]`` (or ``-m MODULE``): one task of a hand-written batch script's srun step.

Each task derives its rank from Slurm's variables as orch's own tasks do (``distenv.derive``: MASTER_ADDR
the step's first node, MASTER_PORT from the job id, unless the batch script exported them), runs the doctor
gate (every task reaches the same verdict: a refused script stops every task with the same error), and
finds the step's job folder (:mod:`orchestrator.task.stepjob`: rank 0 creates it, the others wait for its
job.json). Then the task process runs the script as ``orch run`` would (``python -m
orchestrator.runtime.launch --job-dir DIR``: the world check, outcome records, blame), its output copied to
the rank's log in the folder (:mod:`orchestrator.task.tee`). ``orch status DIR`` / ``orch logs DIR`` read
the folder like any Slurm job's.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from orchestrator.commands._common import add_cluster_argument, add_job_arguments, scope
from orchestrator.service import steps
from orchestrator.service.steps import ExecRequest


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # The arguments orch run and orch submit take for what to run (JOB or -m, --no-check, --ignore, --track,
    # --data-dir): options added there for every launching verb reach orch exec too.
    add_job_arguments(parser, example="train.py")
    helps = {"job": "the torchrun-style script every task runs (train.py; its arguments after --)",
             "overrides": argparse.SUPPRESS}  # a job file's overrides: orch exec runs scripts only
    for action in parser._actions:
        action.help = helps.get(action.dest, action.help)
        if action.dest == "job":
            action.metavar = "SCRIPT"
    add_cluster_argument(parser)
    parser.add_argument("--job-root", metavar="DIR",
                        help="where to create the step's job folder (default: launcher.job_root, else ~/orch-jobs); "
                             "every task of the step must be given the same")


def request_of(args: argparse.Namespace) -> ExecRequest:
    """orch exec's parsed options as the service takes them."""
    return ExecRequest(job=args.job, module=args.module, script_args=args.script_args,
                       overrides=list(args.overrides), no_check=args.no_check, ignore=list(args.ignore),
                       launch=args.launch, track=list(args.track or ()), data_dir=args.data_dir,
                       job_root=args.job_root, scope=scope(args))


def run(args: argparse.Namespace) -> int:
    started = time.time()
    environ = steps.without_torchrun_vars(os.environ)
    steps.check_in_step(environ)  # outside a step: said before anything else
    steps.head_address(environ)
    step = steps.prepare(request_of(args), environ, started)
    if step.created:
        print(f"orch: {step.cfg.job_name}: {step.cfg.world_size} task(s) on {step.cfg.nodes} node(s); "
              f"job folder {step.job_dir}", file=sys.stderr, flush=True)
    return steps.run_task(step, environ)
