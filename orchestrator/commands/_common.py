"""Helpers shared by the verbs: cluster discovery from args, JSON output."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from orchestrator.config import Cluster, find_cluster


def add_cluster_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", metavar="PATH",
                        help="cluster.yaml to use (default: $ORCH_CLUSTER, then ./cluster.yaml)")


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def cluster_from_args(args: argparse.Namespace) -> Cluster:
    cluster = find_cluster(getattr(args, "cluster", None), os.environ, Path.cwd())
    assert cluster is not None  # required: a missing file raised
    return cluster


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
