"""What ``orch plot`` and ``orch compare`` read: the runs a user named (job folders, ids, a sweep's
folder or array id, expanded to its elements), their per-step scalars (``steps.jsonl``), their epochs
(``metrics.jsonl``) and the label of each run among the others: the parameters that differ."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.errors import OrchError
from orchestrator.records.jobdirs import JobDir, find_job_dir, is_job_id, iter_job_dirs, read_job_dir
from orchestrator.records.joblayout import ARRAY_FILE
from orchestrator.records.sweeps import elements as sweep_elements
from orchestrator.records.sweeps import find_sweep
from orchestrator.records.training import read_json_lines, read_metrics, read_result
from orchestrator.spec.numbers import to_float, to_int
from orchestrator.spec.runconfig import JOB_FILE
from orchestrator.spec.tracking import STEPS_FILE

STEPS_LIMIT = 256 * 1024 * 1024  # steps.jsonl: a point every step of a long run stays far below this


@dataclass
class Run:
    job: JobDir
    label: str = ""
    steps: dict[str, tuple[list[int], list[float]]] = field(default_factory=dict)  # key -> (steps, values)
    epochs: list[dict[str, Any]] = field(default_factory=list)  # metrics.jsonl, the last record of each epoch
    records: list[dict[str, Any]] = field(default_factory=list)  # metrics.jsonl, every record (read once)

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.job.config.params) if self.job.config else {}


def expand(refs: Sequence[str], root: Path) -> list[JobDir]:
    """Job folders from what a user typed; a sweep (its folder, or its array id) gives its elements."""
    jobs: list[JobDir] = []
    for ref in refs:
        folder = Path(ref).expanduser()
        if (folder / ARRAY_FILE).is_file() and not (folder / JOB_FILE).is_file():
            found = sorted((p for p in folder.iterdir() if p.name.isdigit() and (p / JOB_FILE).is_file()),
                           key=lambda p: int(p.name))
            if not found:
                raise OrchError(f"the sweep {ref} has no element folders yet", hint="wait until its elements start")
            jobs += [read_job_dir(p.resolve()) for p in found]
            continue
        sweep = find_sweep(root, ref) if is_job_id(ref) else None  # an array id, of any of its submissions
        if sweep is not None:
            jobs += sweep_elements(sweep)
            continue
        if is_job_id(ref) and "_" not in ref:
            elements = sorted((j for j in iter_job_dirs(root) if (j.job_id or "").startswith(f"{ref}_")),
                              key=lambda j: int((j.job_id or "0_0").rsplit("_", 1)[1]))
            if elements:
                jobs += elements
                continue
        jobs.append(find_job_dir(ref, root))
    return jobs


def read_steps(job_dir: Path) -> dict[str, tuple[list[int], list[float]]]:
    """``steps.jsonl`` as one series per key (``train/loss`` -> steps, values); non-numbers left out."""
    series: dict[str, tuple[list[int], list[float]]] = {}
    for record in read_json_lines(job_dir / STEPS_FILE, STEPS_LIMIT):  # damaged lines skipped, warned once
        step = to_int(record.get("step"))
        if step is None:
            continue
        for key, value in record.items():
            number = to_float(value)
            if key in ("step", "time") or number is None:
                continue
            steps, values = series.setdefault(key, ([], []))
            steps.append(step)
            values.append(number)
    return series


def is_number(value: Any) -> bool:
    """A finite JSON number a float can hold (a 400-digit integer is not: math.isfinite would overflow)."""
    return to_float(value) is not None


def last_per_epoch(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    by_epoch: dict[int, dict[str, Any]] = {}
    for record in records:
        if isinstance(record.get("epoch"), int):
            by_epoch[record["epoch"]] = record
    return [by_epoch[e] for e in sorted(by_epoch)]


def labels(params: Sequence[dict[str, Any]], names: Sequence[str]) -> list[str]:
    """Each run's label: the parameters whose values differ between the runs (``lr=0.1 seed=1``);
    the folder names when none differ."""
    keys = sorted({k for p in params for k in p})
    differ = [k for k in keys if len({json.dumps(p.get(k), sort_keys=True) for p in params}) > 1]
    if len(params) < 2 or not differ:
        return list(names)
    return [" ".join(f"{k}={p.get(k)}" for k in differ) for p in params]


def load_runs(jobs: Sequence[JobDir]) -> list[Run]:
    runs = []
    for job in jobs:
        records = read_metrics(job.path)
        runs.append(Run(job, steps=read_steps(job.path), epochs=last_per_epoch(records), records=records))
    for run, label in zip(runs, labels([r.params for r in runs], [r.job.path.name for r in runs]), strict=True):
        run.label = label
    return runs


def final_row(run: Run) -> dict[str, Any]:
    """One row of ``orch compare``: the run's label and parameters, its last epoch's metrics, its state."""
    result = read_result(run.job.path)
    final = result.get("final") if isinstance(result, dict) and isinstance(result.get("final"), dict) else None
    last = final or (run.epochs[-1] if run.epochs else {})
    listed = last.get("metrics")
    names = [n for n in listed if isinstance(n, str)] if isinstance(listed, list) else []
    keys = [f"{split}_{name}" for name in ["loss", *names] for split in ("train", "test")]
    metrics = {k: last[k] for k in keys if is_number(last.get(k))}
    if is_number(last.get("samples_per_s")):
        metrics["samples_per_s"] = last["samples_per_s"]
    return {"job": run.job.path.name, "job_id": run.job.job_id, "label": run.label, "job_dir": str(run.job.path),
            "epoch": last.get("epoch"), "completed": bool(result and result.get("status") == "completed"),
            "metrics": metrics}
