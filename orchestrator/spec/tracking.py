"""Experiment trackers (pure): which ones orch knows, the extra that installs each, and the ids that
keep every attempt of one job in ONE tracker run.

TensorBoard is always on (event files in ``<job>/tb/``); W&B and MLflow are opt in
(``tracking: [wandb, mlflow]`` in cluster.yaml, ``--track NAME`` on the command line). The run id
comes from the job folder, not from the attempt: a requeue, a restart or ``orch run --resume`` of the
folder logs to the same run; the elements of a sweep (``<array folder>/<index>``) share a group, named
after the array folder.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import PurePath
from typing import Literal, cast, get_args

from orchestrator.errors import ConfigError

TrackerName = Literal["wandb", "mlflow"]
# tracker -> (the module a task imports, the pip extra that installs it)
TRACKERS: dict[str, tuple[str, str]] = {"wandb": ("wandb", "wandb"), "mlflow": ("mlflow", "mlflow")}
assert set(TRACKERS) == set(get_args(TrackerName))
TB_DIR = "tb"  # TensorBoard event files, in the job folder
STEPS_FILE = "steps.jsonl"  # per-step scalars (rank 0), one JSON object per logged optimizer step
TRACKING_FILE = "tracking.json"  # what the trackers were given (run ids), written by rank 0
_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]+")
ID_PREFIX_MAX = 40  # W&B ids: at most 64 characters of [A-Za-z0-9_-]


def run_id(job_dir: PurePath | str) -> str:
    """The tracker run id of a job folder: its name, then 10 hex digits of its absolute path (so two
    folders of one name never share a run). Stable across attempts; W&B and MLflow accept it."""
    path = PurePath(job_dir)
    name = _ID_CHARS.sub("-", path.name).strip("-")[:ID_PREFIX_MAX] or "job"
    return f"{name}-{hashlib.sha256(str(path).encode()).hexdigest()[:10]}"


def group_id(job_dir: PurePath | str, in_array: bool) -> str | None:
    """The sweep's group: the run id of the array folder when ``job_dir`` is an array element."""
    return run_id(PurePath(job_dir).parent) if in_array else None


def merge_tracking(*sources: Iterable[str]) -> list[TrackerName]:
    """cluster.yaml's ``tracking`` and ``--track``: checked, each name once, in order."""
    names: list[TrackerName] = []
    for source in sources:
        for raw in source:
            for name in (n.strip().lower() for n in str(raw).split(",")):
                if not name:
                    continue
                if name not in TRACKERS:
                    raise ConfigError(f"unknown tracker {name!r}: orch knows {', '.join(TRACKERS)} (TensorBoard is "
                                      "always on)", hint="e.g. --track wandb, or tracking: [mlflow] in cluster.yaml")
                if name not in names:
                    names.append(cast(TrackerName, name))
    return names


def missing_extra(name: str) -> ConfigError:
    """The error of a tracker whose package is not installed: names the extra."""
    module, extra = TRACKERS[name]
    return ConfigError(f"tracking with {name} needs the {module} package, which is not installed",
                       hint=f"pip install 'orch[{extra}]' where the job runs (or leave {name} out of --track / "
                            "cluster.yaml's tracking)")
