"""Job folders' layout, the one owner of their names: the folder's name, its files' and logs' names, an array's
element folders, and where job folders live (``launcher.job_root``). Pure: nothing here touches the disk.

A job folder is ``<launcher.job_root>/<name>-<YYYYmmdd-HHMMSS>-<hex>/`` holding ``job.json`` and,
depending on how far the run got, ``sbatch.sh``, ``job_id``, ``submit_error.txt``, ``logs/``,
``checkpoints/``, ``metrics.jsonl`` and ``result.json`` (the file names are the constants in
:mod:`orchestrator.spec.runconfig`). Logs: ``logs/slurm-<id>.out`` (batch shell), ``logs/<id>-rank<R>.out``
(Slurm ranks), ``logs/local-rank<R>.out`` (``orch run``); how each rank ended: ``logs/rank<R>.outcome.json``
(:mod:`orchestrator.task.outcome` writes and reads it, :mod:`orchestrator.records.restarts.blame` judges it);
a script rank's torchelastic error file: ``logs/rank<R>.error.json`` (:mod:`orchestrator.records.errorfiles`).
A Hydra app's run directory, every rank's: ``hydra/`` (:mod:`orchestrator.spec.hydra`).

A job array (a sweep) is one folder with ``sbatch.sh``, ``array.json`` (the elements' overrides) and
``job_id`` (the array's id), and one element folder per index, ``<folder>/<index>/``, which is a
complete job folder of its own (``job.json``, ``job_id`` = ``<array id>_<index>``, logs, checkpoints).
Creating a folder is :mod:`orchestrator.records.jobcreate`'s; finding and reading one
:mod:`orchestrator.records.jobdirs`'.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from orchestrator.spec.cluster import Cluster, Launcher
from orchestrator.spec.runconfig import LOG_DIR

ARRAY_FILE = "array.json"  # in an array's folder: the overrides of each element
RAW_JOB_ID_FILE = "slurm_job_id"  # in an array element's folder: its raw SLURM_JOB_ID (the batch script writes it)
# Slurm's filename patterns (sbatch --output, srun --output) of the logs, inside LOG_DIR
BATCH_LOG_PATTERN = "slurm-%j.out"  # %j: the job id
RANK_LOG_PATTERN = "%j-rank%t.out"  # %t: the task (global rank) id
ARRAY_BATCH_LOG_PATTERN = "slurm-%A_%a.out"  # %A_%a: <array id>_<index>, the element's job id
ARRAY_RANK_LOG_PATTERN = "%A_%a-rank%t.out"
ARRAY_INDEX_PATTERN = "%a"  # the element folder's name in Slurm's filename patterns
_OUTCOME_RE = re.compile(r"rank([0-9]{1,9})\.outcome\.json")
_FOLDER_SAFE_RE = re.compile(r"[^A-Za-z0-9_.-]+")
# job_dir_path's "-<YYYYmmdd>-<HHMMSS>-<hex>" at the end of a folder name
STAMP_RE = re.compile(r"-([0-9]{8})-([0-9]{6})-[0-9a-f]+$")


def folder_name(job_name: str) -> str:
    """The job name as a safe folder name part (the script still gets the name as given)."""
    return _FOLDER_SAFE_RE.sub("_", job_name).strip("_.")[:64] or "job"


def job_dir_path(root: Path, job_name: str, now: datetime, token: str) -> Path:
    """``<root>/<name>-<YYYYmmdd-HHMMSS>-<hex>`` (pure: the caller passes the time and the token)."""
    return root / f"{folder_name(job_name)}-{now:%Y%m%d-%H%M%S}-{token}"


def local_log_name(rank: int) -> str:
    """A rank's log of a local run (``orch run``, the API's local mode)."""
    return f"local-rank{rank}.out"


def outcome_path(job_dir: Path, rank: int) -> Path:
    """How rank ``rank`` ended (its outcome record; one per rank, rewritten by every run)."""
    return job_dir / LOG_DIR / f"rank{rank}.outcome.json"


def error_file_path(job_dir: Path, rank: int) -> Path:
    """Rank ``rank``'s torchelastic error file (a script's ``TORCHELASTIC_ERROR_FILE``: what
    ``torch.distributed.elastic``'s ``@record`` writes when the script raises; one per rank, per run)."""
    return job_dir / LOG_DIR / f"rank{rank}.error.json"


def outcome_rank(name: str) -> int | None:
    """The rank of an outcome record's file name (``rank<R>.outcome.json``), else None."""
    match = _OUTCOME_RE.fullmatch(name)
    return int(match.group(1)) if match else None


def log_path(job_dir: Path, job_id: str | None, rank: int | None = None) -> Path:
    """A log file of a job folder: the batch log (``rank=None``) or one rank's; ``job_id=None``: local run."""
    logs = job_dir / LOG_DIR
    if job_id is None:
        return logs / local_log_name(0 if rank is None else rank)
    return logs / (f"slurm-{job_id}.out" if rank is None else f"{job_id}-rank{rank}.out")


def element_dir(array_dir: Path, index: int) -> Path:
    """The folder of array element ``index`` (``%a`` in Slurm's filename patterns)."""
    return array_dir / str(index)


def job_root(cluster: Cluster | None) -> Path:
    """Where job folders live: ``launcher.job_root`` of cluster.yaml (the default when there is none)."""
    launcher = cluster.launcher if cluster is not None else Launcher()
    return Path(launcher.job_root).expanduser()
