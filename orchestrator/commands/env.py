"""``orch env``: this task's place in the job (rank, world size, master), from Slurm or torchrun."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from orchestrator.commands._common import add_cluster_argument, add_json_argument, print_json
from orchestrator.env.distenv import derive
from orchestrator.env.masterport import DEFAULT_PORT_RANGE
from orchestrator.errors import ConfigError
from orchestrator.records.cache import find_cluster
from orchestrator.spec.numbers import parse_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port-range", metavar="LOW-HIGH",
                        help="range for the derived MASTER_PORT when MASTER_PORT is not set (default: "
                             "launcher.port_range of cluster.yaml if one is found, else "
                             f"{DEFAULT_PORT_RANGE[0]}-{DEFAULT_PORT_RANGE[1]})")
    add_cluster_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    dist = derive(os.environ, port_range=_port_range(args))
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
    cluster = find_cluster(args.cluster, os.environ, Path.cwd(), required=False)
    return cluster.launcher.port_range if cluster is not None else DEFAULT_PORT_RANGE


def _parse_port_range(text: str) -> tuple[int, int]:
    low, sep, high = text.partition("-")
    first, last = parse_int(low, digits=5), parse_int(high, digits=5)
    if not sep or first is None or last is None:
        raise ConfigError(f"--port-range {text[:60]!r} is not LOW-HIGH", hint="e.g. --port-range 29500-39499")
    pair = first, last
    if not 1 <= pair[0] <= pair[1] <= 65535:
        raise ConfigError(f"--port-range {text!r} is not within 1-65535 with LOW <= HIGH",
                          hint="e.g. --port-range 29500-39499")
    return pair
