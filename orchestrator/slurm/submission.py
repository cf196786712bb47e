"""The one path to sbatch, under ``orch submit``, the Python API and ``orch mcp`` (through
:mod:`orchestrator.service.queue`; the options become a plan in :mod:`orchestrator.service.plan`).

Sweep (pure): a :class:`~orchestrator.slurm.plan.SubmitPlan` and a grid give an :class:`ArrayPlan`: the same
script with ``--array`` and one ``job.json`` per element, in the element folder ``<job folder>/<index>`` (see
:mod:`orchestrator.records.jobdirs`).

Queue (the edge): check ``launcher.pass_env``, write the job folder, ``sbatch`` the script that the
plan holds (the dry run's script, byte for byte), record the job id, or sbatch's refusal in
``submit_error.txt``. Nothing here prints: the callers report.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from orchestrator.errors import ConfigError, SlurmError
from orchestrator.records.atomic import write_private
from orchestrator.records.jobcreate import (
    create_job_dir,
    filling,
    make_private_dir,
    write_config,
    write_job_dir,
    write_script,
)
from orchestrator.records.jobindex import now_text
from orchestrator.records.joblayout import ARRAY_FILE, element_dir
from orchestrator.records.snapshots.store import snapshot_config
from orchestrator.records.trust import fs_error, make_job_root
from orchestrator.slurm.plan import SubmitPlan
from orchestrator.slurm.render import render_script
from orchestrator.slurm.tracking import (
    deferred_signals,
    private_umask,
    record_ids,
    record_submitted,
    reserve_id,
    write_token,
)
from orchestrator.spec.bounds import BOUNDS, MAX_ARRAY_SIZE
from orchestrator.spec.job import LoadedJob, make_params, parse_overrides
from orchestrator.spec.runconfig import JOB_ID_FILE, SCRIPT_FILE, SUBMIT_ERROR_FILE, RunConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Element:
    """One element of a job array: its index, its own overrides and its job.json."""

    index: int
    overrides: dict[str, Any]
    run_config: RunConfig

    @property
    def job_dir(self) -> Path:
        return Path(self.run_config.job_dir)


@dataclass(frozen=True)
class ArrayPlan:
    """A sweep as one Slurm job array: ``plan`` holds the array's script (``--array``) and folder."""

    plan: SubmitPlan
    elements: tuple[Element, ...]
    throttle: int | None = None

    @property
    def script(self) -> str:
        return self.plan.script

    @property
    def job_dir(self) -> Path:
        return self.plan.job_dir


def parse_sweep(axes: Sequence[str]) -> list[dict[str, str]]:
    """``["lr=0.1,0.01", "batch_size=32,64"]`` -> the cartesian product, the last axis fastest (pure)."""
    names: list[str] = []
    values: list[list[str]] = []
    for axis in axes:
        ((name, text),) = parse_overrides([axis]).items()
        if name in names:
            raise ConfigError(f"--sweep {name} is given twice", hint=f"list every value once: --sweep {name}=a,b,c")
        choices = [v.strip() for v in text.split(",")]
        if not text.strip() or any(not c for c in choices):
            raise ConfigError(f"--sweep {axis!r} has an empty value",
                              hint=f"give comma-separated values, e.g. --sweep {name}=0.1,0.01")
        names.append(name)
        values.append(choices)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values)]


def plan_array(plan: SubmitPlan, loaded: LoadedJob, grid: Sequence[Mapping[str, Any]], *,
               throttle: int | None = None) -> ArrayPlan:
    """The sweep ``grid`` (each entry's overrides on top of the request's) as one job array (pure).

    Every element is validated against the job's parameters before anything is written; all share
    the resources, so only hyperparameters may vary.
    """
    if plan.request.script is not None:
        raise ConfigError("--sweep varies a job file's parameters; a script takes its arguments after --",
                          hint="submit one job per argument set, or write a job file for the sweep")
    if not grid:
        raise ConfigError("the sweep is empty", hint="give at least one value, e.g. --sweep lr=0.1,0.01")
    if len(grid) > MAX_ARRAY_SIZE:
        raise ConfigError(f"the sweep has {len(grid)} elements; a Slurm job array holds at most {MAX_ARRAY_SIZE}",
                          hint="split it into several sweeps")
    problem = BOUNDS["array_throttle"].problem(throttle) if throttle is not None else None
    if problem is not None:
        raise ConfigError(f"--array-throttle {throttle} {problem}",
                          hint=f"e.g. --array-throttle 4 (at most 4 elements run at once; this sweep has {len(grid)})")
    if plan.context.preflight:
        raise ConfigError("--preflight is not supported with --sweep (a job array) yet",
                          hint="leave out --preflight, or run orch submit selftest first and sweep after it")
    spec = f"0-{len(grid) - 1}" + (f"%{throttle}" if throttle else "")
    context = replace(plan.context, array=spec)
    script = render_script(context, plan.request.templates)
    elements = []
    for index, entry in enumerate(grid):
        params = make_params(loaded.spec, {**plan.request.overrides, **entry})
        config = plan.run_config.model_copy(update={"params": params.model_dump(mode="json"),
                                                    "job_dir": str(element_dir(plan.job_dir, index))})
        elements.append(Element(index=index, overrides=dict(entry), run_config=config))
    return ArrayPlan(plan=replace(plan, script=script, context=context), elements=tuple(elements),
                     throttle=throttle)


def check_pass_env(names: Sequence[str], environ: Mapping[str, str]) -> None:
    """launcher.pass_env: each name must be set here, since sbatch hands this environment to the job."""
    missing = [name for name in names if name not in environ]
    if missing:
        raise ConfigError(
            f"launcher.pass_env: {', '.join(missing)} not set in this shell, so the job could not pass it on",
            hint=f"export {missing[0]}=... before orch submit, or remove it from launcher.pass_env (--pass-env)")


def queue(plan: SubmitPlan, environ: Mapping[str, str]) -> str:
    """Write the job folder and sbatch its script; the job id. SlurmError when sbatch refuses (its
    message is then in ``submit_error.txt``). Never an untracked job (:mod:`orchestrator.slurm.tracking`)."""
    check_pass_env(plan.run_config.launcher.pass_env, environ)
    config = snapshot_config(plan.run_config, plan.request.snapshot)
    job_dir = write_job_dir(plan.job_dir, plan.script, config)
    with filling(job_dir):
        reserve_id(job_dir)  # everything that can be written is written before sbatch
        comment = write_token(job_dir, plan.context.sbatch_extra)  # finds the job if orch is SIGKILLed
    with deferred_signals():  # Ctrl-C, SIGTERM, SIGHUP: after the id is recorded, never between
        job_id = _sbatch(job_dir, [job_dir], comment)
        submitted = now_text()  # right after sbatch returned: a little later than Slurm's SubmitTime
        record_ids([(job_dir, job_id)])
        record_submitted(job_dir, job_id, plan.run_config, submitted)
    return job_id


def queue_array(array: ArrayPlan, environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """Write the array folder (sbatch.sh, array.json, one element folder each) and sbatch it once;
    the array's id and each element's (``<array id>_<index>``)."""
    check_pass_env(array.plan.run_config.launcher.pass_env, environ)
    snap = snapshot_config(array.plan.run_config, array.plan.request.snapshot).snapshot
    folder = array.job_dir
    make_job_root(folder.parent)  # trusted, created with the one mode (orchestrator.records.trust)
    try:
        make_private_dir(folder)
    except OSError as exc:
        raise fs_error(folder, exc) from None
    with filling(folder):  # a file-system error leaves no half-written array folder
        write_script(folder, array.script)
        write_private(folder / ARRAY_FILE, json.dumps(array_record(array), indent=2, sort_keys=True) + "\n")
        reserve_id(folder)
        comment = write_token(folder, array.plan.context.sbatch_extra)
        for element in array.elements:
            create_job_dir(element.job_dir)
            write_config(element.job_dir, element.run_config.model_copy(update={"snapshot": snap}))
            reserve_id(element.job_dir)
    folders = [folder, *(e.job_dir for e in array.elements)]
    with deferred_signals():  # as queue(): the ids are recorded before a signal stops orch
        array_id = _sbatch(folder, folders, comment)
        submitted = now_text()
        ids = [f"{array_id}_{e.index}" for e in array.elements]
        record_ids([(folder, array_id), *((e.job_dir, i) for e, i in zip(array.elements, ids, strict=True))])
        for element, job_id in zip(array.elements, ids, strict=True):
            record_submitted(element.job_dir, job_id, element.run_config, submitted)
    return array_id, ids


def array_record(array: ArrayPlan) -> dict[str, Any]:
    """``array.json``: what the array holds (the elements' job.json files are the contract)."""
    cfg = array.plan.run_config
    return {"version": 1, "job_name": cfg.job_name, "created": cfg.created, "array": array.plan.context.array,
            "throttle": array.throttle,
            "elements": [{"index": e.index, "overrides": e.overrides, "job_dir": str(e.job_dir)}
                         for e in array.elements]}


def _sbatch(job_dir: Path, folders: Sequence[Path], comment: str) -> str:
    from orchestrator.slurm import client as slurm  # the dry run (plan only) never loads the Slurm adapter

    try:
        with private_umask():  # sbatch hands its umask to the job: the batch log is the user's alone
            return slurm.sbatch(job_dir / SCRIPT_FILE, comment=comment)
    except SlurmError as exc:
        for path in folders:
            (path / JOB_ID_FILE).unlink(missing_ok=True)  # the blanks reserved for an id that never came
            try:
                write_private(path / SUBMIT_ERROR_FILE, exc.message + "\n")
            except OSError as write_exc:  # a full disk: the refusal is still reported
                log.warning("cannot write %s: %s", path / SUBMIT_ERROR_FILE, write_exc.strerror)
        raise
