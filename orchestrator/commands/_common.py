"""Helpers shared by the verbs: the arguments several verbs take, cluster discovery from args, JSON output."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from orchestrator.records.cache import find_cluster
from orchestrator.spec.cluster import DATA_DIR_ENV_VAR, Cluster
from orchestrator.spec.launch import AUTO, STYLES


def add_job_arguments(parser: argparse.ArgumentParser, *, example: str) -> None:
    """What to run, as ``orch submit`` and ``orch run`` take it: JOB or ``-m MODULE``, then ``key=value``
    overrides (a script's own arguments come after ``--``), ``--data-dir`` and ``--no-check``."""
    parser.add_argument("job", nargs="?", metavar="JOB",
                        help=f"a job name from jobs/ (e.g. {example}), the path of a job file, or a torchrun-style "
                             "script (train.py; its arguments after --)")
    parser.add_argument("-m", dest="module", metavar="MODULE",
                        help="run a module as a script, as python -m does (its arguments after --)")
    parser.set_defaults(takes_script_args=True)
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="hyperparameter overrides, checked against the job's parameters (e.g. lr=0.05)")
    parser.add_argument("--data-dir", metavar="DIR", help=f"dataset directory (default: ${DATA_DIR_ENV_VAR})")
    parser.add_argument("--no-check", action="store_true",
                        help="launch a script even when orch doctor finds errors in it (they are still printed)")
    add_ignore_argument(parser)
    add_launch_argument(parser)
    parser.add_argument("--track", action="append", default=[], metavar="NAME",
                        help="also log to this experiment tracker (wandb, mlflow; repeatable), one run per job "
                             "across requeues and restarts; cluster.yaml's tracking adds its own (TensorBoard is "
                             "always on)")


def add_restart_arguments(parser: argparse.ArgumentParser, *, spares: bool) -> None:
    """``--max-restarts`` (orch submit and orch run) and ``--spare-nodes`` (orch submit)."""
    parser.add_argument("--max-restarts", type=int, metavar="N",
                        help="restart a failed training step N times inside the allocation (or the local run), "
                             "from the newest checkpoint (default: launcher.max_restarts of cluster.yaml; 0: never)")
    if spares:
        parser.add_argument("--spare-nodes", type=int, metavar="K",
                            help="allocate K nodes more than --nodes; a restart runs without a blamed node, on a spare")


def add_world_arguments(parser: argparse.ArgumentParser) -> None:
    """``--strict-world`` and ``--independent-ranks`` (orch submit and orch run): launcher.world_check for this job."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--strict-world", dest="world_check", action="store_const", const="strict",
                       help="scripts: fail the run when its ranks never formed one process group (each trained "
                            "alone) or never called init_process_group (default: launcher.world_check, a warning)")
    group.add_argument("--independent-ranks", dest="world_check", action="store_const", const="independent",
                       help="scripts: the ranks are meant to train independently (no process group): no world check")


def add_timeout_argument(parser: argparse.ArgumentParser) -> None:
    """``--collective-timeout S`` (orch submit and orch run): launcher.collective_timeout for this job."""
    parser.add_argument("--collective-timeout", type=int, metavar="S",
                        help="seconds a collective may wait before the job ends (a stuck or crashed rank); scripts: "
                             "their process group's timeout unless they pass their own timeout= (default: "
                             "launcher.collective_timeout of cluster.yaml, 30)")


# run's per-job launcher settings -> their flags (orch submit checks them in its request, naming the flag too)
LAUNCHER_FLAGS = {"max_restarts": "--max-restarts", "collective_timeout": "--collective-timeout"}


def check_launcher_flags(args: argparse.Namespace) -> None:
    """Each launcher setting given as a flag within its bound (ConfigError naming the flag), before anything starts."""
    from orchestrator.errors import ConfigError
    from orchestrator.spec.bounds import check

    for dest, flag in LAUNCHER_FLAGS.items():
        try:
            check(dest, getattr(args, dest, None))
        except ValueError as exc:
            raise ConfigError(f"{flag} {exc}", hint=f"pass {flag} within the bound, or leave it out for "
                              f"launcher.{dest} of cluster.yaml") from None


def restarts_note(max_restarts: int, spare_nodes: int = 0) -> str:
    """The dry run's line on restarts inside the allocation (empty when they are off)."""
    if max_restarts == 0:
        return ""
    spares = (f"; {spare_nodes} spare node(s) allocated: a restart runs without a blamed node"
              if spare_nodes else "; a failure blamed on a node: the job is submitted again without it")
    return (f"# restarts: a failed training step is restarted up to {max_restarts} time(s) in the allocation "
            f"from the newest checkpoint (attempts.json){spares}\n")


def add_launch_argument(parser: argparse.ArgumentParser) -> None:
    """``--launch STYLE``: how a script's ranks are started (``orchestrator.spec.launch``)."""
    parser.add_argument("--launch", choices=(AUTO, *STYLES), default=AUTO, metavar="STYLE",
                        help="how the script starts its ranks: env (torchrun's variables), local-rank-arg "
                             "(torch.distributed.launch's --local-rank=N), per-node (it spawns its own processes: "
                             "one task per node), slurm (it reads SLURM_PROCID); default auto: read from the script, "
                             "shown by the dry run")


def add_ignore_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ignore", action="append", default=[], metavar="CODE[,CODE]",
                        help="orch doctor codes not to report for this script (repeatable), e.g. --ignore "
                             "DDP001,DDP005; cluster.yaml's doctor.ignore adds its own")


def add_cluster_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", metavar="PATH|NAME",
                        help="cluster file to use: a path, or NAME for ~/.config/orch/clusters/NAME.yaml "
                             "(default: $ORCH_CLUSTER, then ./cluster.yaml)")


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def cluster_from_args(args: argparse.Namespace) -> Cluster:
    cluster = find_cluster(getattr(args, "cluster", None), os.environ, Path.cwd())
    assert cluster is not None  # required: a missing file raised
    return cluster


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
