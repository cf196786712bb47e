"""``orch env``: this task's place in the job (rank, world size, master), from Slurm or torchrun.

``--export`` prints the variables torchrun gives a worker (the set orch gives a script), derived for this
task, as ``export NAME=value`` lines (values shell-quoted) for ``eval "$(orch env --export)"`` inside srun:
a torchrun-style script then runs without orch around it. Nothing hosts a store for it, so
TORCHELASTIC_USE_AGENT_STORE is False (rank 0's init_process_group hosts it, as without torchrun).
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Mapping

from orchestrator.commands._common import add_cluster_argument, print_json, scope
from orchestrator.env.distenv import DistEnv, derive, restart_count, script_run_id
from orchestrator.env.masterport import DEFAULT_PORT_RANGE
from orchestrator.env.taskenv import script_env
from orchestrator.errors import ConfigError
from orchestrator.service.place import port_range, task_cpus
from orchestrator.spec.numbers import parse_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port-range", metavar="LOW-HIGH",
                        help="range for the derived MASTER_PORT when MASTER_PORT is not set (default: "
                             "launcher.port_range of cluster.yaml if one is found, else "
                             f"{DEFAULT_PORT_RANGE[0]}-{DEFAULT_PORT_RANGE[1]})")
    add_cluster_argument(parser)
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="print machine-readable JSON")
    shown.add_argument("--export", action="store_true",
                       help="print torchrun's variables for this task as shell exports: eval \"$(orch env --export)\"")


def export_lines(dist: DistEnv, environ: Mapping[str, str]) -> list[str]:
    """``export NAME=value`` for each variable torchrun gives a worker, derived for this task (pure)."""
    fields = script_env(dist, restart_count=restart_count(environ), max_restarts=0,
                        run_id=script_run_id(environ, "none"), cpus_per_task=task_cpus(environ), environ=environ)
    fields["TORCHELASTIC_USE_AGENT_STORE"] = "False"  # no agent: init_process_group's rank 0 hosts the store
    return [f"export {name}={shlex.quote(value)}" for name, value in fields.items()]


def run(args: argparse.Namespace) -> int:
    dist = derive(os.environ, port_range=_port_range(args))
    if args.export:
        print("\n".join(export_lines(dist, os.environ)))
        return 0
    fields = dist.as_dict()
    if args.json:
        print_json(fields)
    else:
        width = max(len(key) for key in fields)
        for key, value in fields.items():
            print(f"{key:<{width}}  {value}")
    return 0


def _port_range(args: argparse.Namespace) -> tuple[int, int]:
    if args.port_range:
        return _parse_port_range(args.port_range)
    return port_range(scope(args))


def _parse_port_range(text: str) -> tuple[int, int]:
    low, sep, high = text.partition("-")
    first, last = parse_int(low, digits=5), parse_int(high, digits=5)
    if not sep or first is None or last is None:
        raise ConfigError(f"--port-range {text[:60]!r} is not LOW-HIGH", hint="e.g. --port-range 20000-32767")
    pair = first, last
    if not 1 <= pair[0] <= pair[1] <= 65535:
        raise ConfigError(f"--port-range {text!r} is not within 1-65535 with LOW <= HIGH",
                          hint="e.g. --port-range 20000-32767")
    return pair
