"""Helpers shared by the follow-up verbs (status, logs, cancel, list, plot): where job folders are."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from orchestrator.records.cache import find_cluster
from orchestrator.records.jobdirs import job_root
from orchestrator.spec.cluster import Cluster


def cluster_or_none(args: argparse.Namespace) -> Cluster | None:
    """The cluster.yaml in use, or None when none was asked for and ./cluster.yaml does not exist.

    The follow-up verbs only need ``launcher.job_root`` from it, so they work without one (with
    the default job root); a file that was named but is missing or invalid is still an error.
    """
    return find_cluster(getattr(args, "cluster", None), os.environ, Path.cwd(), required=False)


def job_root_from_args(args: argparse.Namespace) -> Path:
    return job_root(cluster_or_none(args))


def format_rows(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, str]) -> str:
    """A plain text table: ``columns`` maps each title to a row key; empty cells show ``-``."""
    header = list(columns)
    body = [[_cell(row.get(key)) for key in columns.values()] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in body]
    return "\n".join(lines)


def _cell(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)
