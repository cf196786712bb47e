"""``orch tb [JOB ...|--all] [--print] [--port N]``: TensorBoard on the event files of job folders.

Each run of the shared entrypoint writes ``<job folder>/tb/`` (rank 0). One job: ``tensorboard
--logdir <folder>/tb``; several (or a sweep, which stands for its elements): ``--logdir_spec`` with
one name per run; ``--all``: the whole job root (TensorBoard finds every ``tb/`` below it).
``--print`` prints the command instead of starting it (to run it on another port, host or machine).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys

from orchestrator.commands._common import add_cluster_argument, scope
from orchestrator.errors import ConfigError
from orchestrator.service.curves import tensorboard_logdir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("jobs", nargs="*", metavar="JOBID|DIR", help="Slurm job ids or job folders, or a sweep")
    parser.add_argument("--all", action="store_true", help="every job folder under launcher.job_root")
    parser.add_argument("--print", action="store_true", help="print the command instead of starting TensorBoard")
    parser.add_argument("--port", type=int, default=6006, help="TensorBoard's port (default 6006)")
    add_cluster_argument(parser)


def command(args: argparse.Namespace) -> list[str]:
    """The TensorBoard command line for the chosen job folders."""
    if args.all == bool(args.jobs):
        raise ConfigError("orch tb takes job ids / folders, or --all", hint="e.g. orch tb 1234, orch tb --all")
    if not 1 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port} is no TCP port", hint="e.g. --port 6006")
    exe = shutil.which("tensorboard")
    head = [exe] if exe else [sys.executable, "-m", "tensorboard.main"]
    tail = ["--port", str(args.port)]
    return [*head, *tensorboard_logdir(args.jobs, scope(args), every=args.all), *tail]


def run(args: argparse.Namespace) -> int:
    argv = command(args)
    if args.print:
        print(shlex.join(argv))
        return 0
    sys.stdout.flush()
    os.execv(argv[0], argv)  # TensorBoard in this process's place: Ctrl-C stops it as usual
