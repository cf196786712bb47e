"""Job folders on disk: find them (by path or Slurm job id), list them, read what runs left there.

A job folder is ``<launcher.job_root>/<name>-<YYYYmmdd-HHMMSS>-<hex>/`` holding ``job.json`` and,
depending on how far the run got, ``job_id``, ``submit_error.txt``, ``logs/``, ``metrics.jsonl`` and
``result.json`` (the names are the constants in :mod:`orchestrator.runconfig`). Nothing here runs
Slurm: the verbs combine these records with :mod:`orchestrator.slurm`.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.config import Cluster, Launcher
from orchestrator.errors import OrchError
from orchestrator.runconfig import (
    JOB_FILE,
    JOB_ID_FILE,
    LOG_DIR,
    METRICS_FILE,
    PROGRESS_FILE,
    RESULT_FILE,
    SUBMIT_ERROR_FILE,
    RunConfig,
    read_run_config,
)

log = logging.getLogger(__name__)

# "1234", an array element "1234_7" (or the whole array "1234_[0-3]" as sbatch never prints it)
_JOB_ID_RE = re.compile(r"^\d+(_\d+)?$")


@dataclass(frozen=True)
class JobDir:
    """One job folder and what it records. ``config`` is None when job.json is missing or damaged."""

    path: Path
    config: RunConfig | None
    job_id: str | None
    submit_error: str | None

    @property
    def name(self) -> str:
        return self.config.job_name if self.config else self.path.name

    @property
    def created(self) -> str:
        return self.config.created if self.config else ""

    @property
    def mode(self) -> str:
        return self.config.mode if self.config else "?"

    def log_file(self, rank: int | None = None) -> Path:
        """The batch log (``rank=None``) or one rank's log, as the templates and ``orch run`` name them."""
        logs = self.path / LOG_DIR
        if self.mode == "local":
            return logs / f"local-rank{0 if rank is None else rank}.out"
        job_id = self.queued_id()
        if rank is None:
            return logs / f"slurm-{job_id}.out"
        return logs / f"{job_id}-rank{rank}.out"

    def queued_id(self) -> str:
        """The Slurm job id; a folder that was never queued raises an error saying why."""
        if self.job_id is None:
            raise OrchError(f"job folder {self.path} has no job id: it was never queued",
                            hint=_not_queued_hint(self))
        return self.job_id


def _not_queued_hint(job: JobDir) -> str:
    if job.submit_error:
        reason = job.submit_error.strip().splitlines()[-1] if job.submit_error.strip() else "no message"
        return f"sbatch refused it: {reason} (details in {SUBMIT_ERROR_FILE})"
    return "submit it with orch submit"


def is_job_id(text: str) -> bool:
    return bool(_JOB_ID_RE.match(text))


def job_root(cluster: Cluster | None) -> Path:
    """Where job folders live: ``launcher.job_root`` of cluster.yaml (the default when there is none)."""
    launcher = cluster.launcher if cluster is not None else Launcher()
    return Path(launcher.job_root).expanduser()


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("cannot read %s: %s", path, exc.strerror)
        return None


def read_job_dir(path: Path) -> JobDir:
    """Read one job folder; a damaged job.json gives ``config=None`` rather than an error."""
    try:
        config: RunConfig | None = read_run_config(path)
    except OrchError as exc:
        log.debug("%s", exc.message)
        config = None
    job_id = (_read_text(path / JOB_ID_FILE) or "").strip() or None
    return JobDir(path=path, config=config, job_id=job_id, submit_error=_read_text(path / SUBMIT_ERROR_FILE))


def list_job_dirs(root: Path) -> list[JobDir]:
    """Every job folder directly under ``root``, newest first (by creation time, then name)."""
    if not root.is_dir():
        return []
    found = [read_job_dir(p) for p in root.iterdir() if (p / JOB_FILE).is_file()]
    return sorted(found, key=lambda j: (j.created, j.path.name), reverse=True)


def find_job_dir(ref: str, root: Path) -> JobDir:
    """A job folder from what a user typed: a folder path, or a Slurm job id (newest folder wins).

    Job ids restart when a cluster is rebuilt, so several folders can carry one id; the newest is
    the one a user means.
    """
    as_path = Path(ref).expanduser()
    if (as_path / JOB_FILE).is_file():
        return read_job_dir(as_path.resolve())
    if is_job_id(ref):
        for job in list_job_dirs(root):
            if job.job_id == ref:
                return job
        raise OrchError(f"no job folder under {root} has job id {ref}",
                        hint="pass the job folder instead, or the --cluster whose launcher.job_root holds it "
                             "(orch list shows the jobs submitted from here)")
    raise OrchError(f"{ref!r} is neither a job id nor a job folder (no {JOB_FILE} in it)",
                    hint="pass a Slurm job id such as 1234 or the folder that orch submit printed")


def read_metrics(job_dir: Path) -> list[dict[str, Any]]:
    """The per-epoch records in ``metrics.jsonl``; a line torn by a crash or preemption is skipped."""
    text = _read_text(job_dir / METRICS_FILE)
    if text is None:
        return []
    records: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            log.warning("%s line %d is not JSON; skipped", job_dir / METRICS_FILE, number)
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def read_progress(job_dir: Path) -> dict[str, Any] | None:
    """Where the run is inside an epoch (``progress.json``: epoch, epochs, step, steps, loss, ...)."""
    text = _read_text(job_dir / PROGRESS_FILE)
    if text is None:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def progress_cells(record: dict[str, Any] | None) -> dict[str, str | None]:
    """``epoch``, ``step`` and ``loss`` as table cells ("2/10", "120/469", "0.3412") from a progress record."""
    if not record:
        return {"epoch": None, "step": None, "loss": None}

    def fraction(key: str, total: str) -> str | None:
        value = record.get(key)
        return f"{value}/{record.get(total)}" if isinstance(value, int) else None

    loss = record.get("loss")
    return {"epoch": fraction("epoch", "epochs"), "step": fraction("step", "steps"),
            "loss": f"{loss:.4f}" if isinstance(loss, (int, float)) and not isinstance(loss, bool) else None}


def metrics_cell(record: dict[str, Any] | None) -> str | None:
    """The task's metrics of one metrics.jsonl record, by name: the test value when there is one
    (``test_acc 0.9912 test_mae 0.1275``), else the training value."""
    if not record:
        return None
    names = record.get("metrics")
    if not isinstance(names, list):  # a record written before the list existed
        names = ["acc"] if "train_acc" in record else []
    parts = []
    for name in ["loss", *[n for n in names if isinstance(n, str)]]:
        for key in (f"test_{name}", f"train_{name}"):
            value = record.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                parts.append(f"{key} {value:.4g}")
                break
    return " ".join(parts) or None


def read_result(job_dir: Path) -> dict[str, Any] | None:
    """The final metrics in ``result.json``, or None when the run has not finished."""
    text = _read_text(job_dir / RESULT_FILE)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
