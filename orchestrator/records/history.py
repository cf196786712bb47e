"""What earlier runs of a job measured, for its time budget (:mod:`orchestrator.spec.budget`): a thin reader.

An earlier run is a job folder under the same job root (an array's element too) of the same job name and job
file, the same world size and the same per-step work (``batch_size``, ``grad_accum``, ``max_steps_per_epoch``:
what sets a step's time and the steps of an epoch). The newest :data:`HISTORY_RUNS` such folders that
measured anything are read; the folder names carry the job name (:func:`joblayout.folder_name`), so other
jobs' folders are never opened (one ``scandir`` of the root, names only). From each:

- ``metrics.jsonl`` (every epoch a run finished, failed runs too): training seconds per step
  (``train_samples / samples_per_s / steps``), the rest of the epoch (evaluation), the steps of an epoch;
- ``result.json`` (a finished run): start-up (``goodput.startup_s``, else the sum of ``startup``'s phases
  after the queue) and the checkpoint time: ``checkpoint_stall_s`` (the training thread's share) and, until
  on disk, that plus ``checkpoint_write_s`` for background saves (a synchronous save's stall holds its write);
  a run of an older orch: ``checkpoint_s``; divided by the saves (``checkpoints`` when recorded, else one per
  epoch: then an upper bound).

The slowest run's value of each is kept (a budget errs on the long side). A job run from a script writes
none of these (its steps are its own): it has no history.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import OrchError
from orchestrator.records.jobdirs import may_read
from orchestrator.records.joblayout import element_dir, folder_name
from orchestrator.records.sweeps import indices, is_sweep
from orchestrator.records.training import MAX_ETA_S, read_metrics, read_result
from orchestrator.spec.budget import Budget, Measured, budget, planned_of
from orchestrator.spec.numbers import to_float, to_int
from orchestrator.spec.runconfig import JOB_FILE, RunConfig, read_run_config

HISTORY_RUNS = 5  # the newest runs read
SCAN_LIMIT = 200  # folders of the job's name looked at, at most (a root of many runs of one job)
SAME_WORK = ("batch_size", "grad_accum", "max_steps_per_epoch")  # params that set a step's time and count
QUEUE_PHASES = ("queued", "import_torch")  # startup's phases that are no part of the start-up sum


@dataclass(frozen=True)
class RunFigures:
    """One earlier run's figures (None: not measured)."""

    startup_s: float | None = None
    step_s: float | None = None
    steps_per_epoch: int | None = None
    eval_s: float | None = None
    save_s: float | None = None
    durable_s: float | None = None
    save_bound: bool = False

    @property
    def empty(self) -> bool:
        return self.step_s is None and self.startup_s is None and self.save_s is None


def read_history(root: Path, cfg: RunConfig, *, runs: int = HISTORY_RUNS) -> tuple[Measured | None, str]:
    """(the measurements of the newest earlier runs like ``cfg``, or None and why there are none)."""
    what = (f"no earlier run of job {cfg.job_name} with {cfg.world_size} rank(s) and the same batch settings in "
            "the job root")
    if cfg.script is not None:
        return None, "no history (a script: orch measures steps and checkpoints of its own entrypoint only)"
    found = [f for f in (figures(path) for path in _similar(root, cfg)) if not f.empty][:runs]
    if not found:
        return None, f"no history ({what})"
    return combine(found), ""


def _similar(root: Path, cfg: RunConfig) -> Iterator[Path]:
    """Earlier job folders of ``cfg``'s job, newest first (at most :data:`SCAN_LIMIT` looked at): only the
    root's entries named ``<job name>-<stamp>-<hex>`` are opened (the stamp orders them), a sweep's elements
    in index order."""
    prefix = folder_name(cfg.job_name) + "-"
    try:
        names = sorted((entry.name for entry in os.scandir(root) if entry.name.startswith(prefix)), reverse=True)
    except OSError:
        return
    looked = 0
    for name in names:
        folder = root / name
        if not may_read(folder):  # another user's, in a shared job root: not this user's history
            continue
        paths = [element_dir(folder, i) for i in indices(folder)] if is_sweep(folder) else [folder]
        for path in paths:
            looked += 1
            if looked > SCAN_LIMIT:
                return
            if path == Path(cfg.job_dir) or not may_read(path) or not (path / JOB_FILE).is_file():
                continue
            try:
                theirs = read_run_config(path)
            except OrchError:
                continue
            if _alike(theirs, cfg):
                yield path


def _alike(theirs: RunConfig, ours: RunConfig) -> bool:
    return (theirs.job_name == ours.job_name and theirs.job_file == ours.job_file and theirs.script is None
            and theirs.world_size == ours.world_size
            and all(theirs.params.get(k) == ours.params.get(k) for k in SAME_WORK))


def figures(job_dir: Path) -> RunFigures:
    """What one run's records measured."""
    step = eval_s = None
    steps = None
    train = extra = 0.0
    count = epochs = 0
    for record in read_metrics(job_dir):
        samples, rate = to_float(record.get("train_samples")), to_float(record.get("samples_per_s"))
        seconds, per_epoch = to_float(record.get("seconds")), to_int(record.get("steps"))
        if samples is None or not rate or seconds is None or not per_epoch:
            continue
        spent = samples / rate
        train, extra, steps = train + spent, extra + max(0.0, seconds - spent), per_epoch
        count, epochs = count + per_epoch, epochs + 1
    if count:
        step, eval_s = train / count, extra / epochs
    result = read_result(job_dir) or {}
    save, durable, bound = _saves(result)
    return RunFigures(startup_s=_sane(_startup(result)), step_s=_sane(step), steps_per_epoch=steps,
                      eval_s=_sane(eval_s), save_s=_sane(save), durable_s=_sane(durable), save_bound=bound)


def _sane(seconds: float | None) -> float | None:
    """A duration a record may claim: finite, not negative, within a century (else: not measured)."""
    return seconds if seconds is not None and math.isfinite(seconds) and 0 <= seconds <= MAX_ETA_S else None


def _startup(result: Mapping[str, Any]) -> float | None:
    goodput = result.get("goodput")
    found = to_float(goodput.get("startup_s")) if isinstance(goodput, dict) else None
    if found:
        return found
    phases = result.get("startup")
    if not isinstance(phases, dict):
        return None
    values = [to_float(v) for k, v in phases.items() if k not in QUEUE_PHASES]
    total = sum(v for v in values if v is not None)
    return total or None


def _saves(result: Mapping[str, Any]) -> tuple[float | None, float | None, bool]:
    """(one save on the training thread, one save until on disk, whether these are upper bounds)."""
    stall = to_float(result.get("checkpoint_stall_s"))
    write = to_float(result.get("checkpoint_write_s"))
    whole = to_float(result.get("checkpoint_s"))
    thread = stall if stall is not None else whole
    # until on disk: a synchronous save's stall holds its write (write <= stall); a background write follows
    # the stall's copy (stall + write)
    durable = ((stall if write <= stall else stall + write) if stall is not None and write is not None
               else (whole if whole is not None else thread))
    if thread is None or durable is None:
        return None, None, False
    saves = to_int(result.get("checkpoints"))
    if saves:
        return thread / saves, durable / saves, False
    epochs = to_int(result.get("epochs"))
    if not epochs:
        return None, None, False
    return thread / epochs, durable / epochs, True  # at least one save per epoch: at most this each


def combine(runs: list[RunFigures]) -> Measured:
    """The slowest value of each figure over ``runs`` (the newest run's steps per epoch)."""

    def slowest(name: str) -> float | None:
        values = [getattr(r, name) for r in runs if getattr(r, name) is not None]
        return max(values) if values else None

    saving = [r for r in runs if r.save_s is not None]
    worst = max(saving, key=lambda r: r.durable_s or 0.0) if saving else None
    steps = next((r.steps_per_epoch for r in runs if r.steps_per_epoch), None)
    return Measured(runs=len(runs), startup_s=slowest("startup_s"), step_s=slowest("step_s"), steps_per_epoch=steps,
                    eval_s=slowest("eval_s"), save_s=slowest("save_s"), durable_s=slowest("durable_s"),
                    save_bound=worst.save_bound if worst is not None else False)


def job_budget(cfg: RunConfig, root: Path, *, max_time_s: int | None = None) -> Budget:
    """The budget of the run ``cfg`` plans, from the earlier runs under ``root``."""
    measured, why = read_history(root, cfg)
    return budget(measured, planned_of(cfg, max_time_s), no_history=why)
