"""The one path to sbatch, shared by ``orch submit`` and the Python API (:mod:`orchestrator.api`).

Plan (pure): a request, the cluster and the job give a :class:`~orchestrator.slurm.plan.SubmitPlan`
(``plan.build_plan``); a sweep gives an :class:`ArrayPlan`: the same script with ``--array`` and one
``job.json`` per element, in the element folder ``<job folder>/<index>`` (see :mod:`orchestrator.records.jobdirs`).
:func:`new_plan` supplies what the pure planner must not look up itself (time, token, python, job root).

Queue (the edge): check ``launcher.pass_env``, write the job folder, ``sbatch`` the script that the
plan holds (the dry run's script, byte for byte), record the job id, or sbatch's refusal in
``submit_error.txt``. Nothing here prints: the callers report.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.errors import ConfigError, SlurmError
from orchestrator.records.atomic import write_private
from orchestrator.records.codetrust import check_launch
from orchestrator.records.jobdirs import (
    ARRAY_FILE,
    create_job_dir,
    element_dir,
    filling,
    job_root,
    make_private_dir,
    write_config,
    write_job_dir,
    write_script,
)
from orchestrator.records.jobindex import now_text
from orchestrator.records.snapshots.store import snapshot_config
from orchestrator.records.trust import fs_error, make_job_root
from orchestrator.slurm.plan import SubmitPlan, SubmitRequest, build_plan, make_request, nodes_wanted
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
from orchestrator.spec.cluster import DATA_DIR_ENV_VAR, Cluster, resolve_data_dir

if TYPE_CHECKING:
    from orchestrator.doctor.findings import Finding
from orchestrator.spec.job import LoadedJob, Resources, make_params, parse_overrides
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


@dataclass(frozen=True)
class SubmitOptions:
    """Everything ``orch submit`` accepts, by its flags' names; the Python API takes the same keywords (the
    fields are those of :mod:`orchestrator.spec.options` with ``request``: tests/spec/test_options.py).

    ``overrides``: the command line's ``key=value`` strings, or a mapping of typed values (Python).
    ``sbatch_args``: ``--sbatch-arg`` items (``KEY=VALUE`` / ``KEY``), or a mapping (``True``/None: a flag).
    ``env``: ``--env`` items (``KEY=VALUE``), or a mapping.
    """

    job: str | None = None
    module: str | None = None
    script_args: Sequence[str] | None = None  # what followed ``--`` (None: no ``--``)
    overrides: Sequence[str] | Mapping[str, Any] = ()
    nodes: int | None = None
    gpus: int | None = None
    gpus_per_task: int | None = None
    ntasks_per_node: int | None = None
    cpus_per_task: int | None = None
    partition: str | None = None
    time: str | None = None
    job_name: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    exclusive: bool | None = None
    nodelist: str | None = None
    exclude: str | None = None
    reservation: str | None = None
    dependency: str | None = None
    mail_type: str | None = None
    mail_user: str | None = None
    sbatch_args: Sequence[str] | Mapping[str, str | bool | None] = ()
    env: Sequence[str] | Mapping[str, str] = ()
    pass_env: Sequence[str] = ()  # names of variables the job takes from this environment (values never written)
    container_runtime: str | None = None
    container_image: str | None = None
    container_mounts: Sequence[str] = field(default_factory=tuple)
    preflight: str | None = None  # "stop", "exclude", "off" (None: launcher.preflight of cluster.yaml)
    max_restarts: int | None = None  # restarts inside the allocation (None: launcher.max_restarts)
    spare_nodes: int | None = None  # nodes allocated beyond `nodes` for those restarts
    world_check: str | None = None  # "warn", "strict", "independent" (None: launcher.world_check of cluster.yaml)
    collective_timeout: int | None = None  # seconds a collective waits (None: launcher.collective_timeout)
    templates: str | Path | None = None
    data_dir: str | Path | None = None
    no_check: bool = False  # launch a script even when orch doctor finds errors in it (they are still shown)
    ignore: Sequence[str] = ()  # orch doctor codes not reported (--ignore, cluster.yaml's doctor.ignore)
    no_snapshot: bool = False  # run the files in place, not a copy taken at submit (docs/snapshots.md)
    launch: str | None = None  # how a script's ranks start (orchestrator.spec.launch; None/"auto": read the script)


OPTION_NAMES = tuple(f.name for f in fields(SubmitOptions))


def build_request(options: SubmitOptions, *, cwd: Path, environ: Mapping[str, str],
                  search: Sequence[Path], dry_run: bool = False,
                  findings: list[Finding] | None = None) -> tuple[SubmitRequest, LoadedJob]:
    """The one translation of submit options into a validated request and its job (CLI and API alike).

    Resolves a script or ``-m`` module (``search``: where modules are looked for after ``cwd``) and
    runs ``orch doctor`` on a script (its errors refuse it unless ``no_check`` or ``dry_run``: then
    they are only shown; ``findings``, when given, receives them), else loads the job file. ConfigError
    names the field.
    """
    from orchestrator.spec.doctorcodes import parse_codes
    from orchestrator.spec.extras import NAMED_OPTIONS, parse_env_args, parse_pass_env, parse_sbatch_args
    from orchestrator.spec.job import load_job
    from orchestrator.spec.launch import check_style
    from orchestrator.spec.script import resolve_target, script_job

    raw = options.overrides
    items = [f"{k}={v}" for k, v in raw.items()] if isinstance(raw, Mapping) else list(raw)
    target = resolve_target(options.job, options.module, options.script_args, items, cwd, search)
    if target is None and not options.job:
        raise ConfigError("orch submit needs a JOB, a script or -m MODULE", hint="e.g. orch submit mnist --nodes 2")
    check_launch(options.job, target, environ=environ, cwd=cwd, templates=options.templates)  # before any import
    asked = check_style(options.launch, script=target is not None)
    if target is not None:
        from orchestrator.doctor.gate import check_script  # a job file: the doctor stays unimported

        found, style = check_script(target, refuse=not (options.no_check or dry_run), ignore=parse_codes(
            options.ignore, "--ignore"), would_refuse="orch submit" if dry_run and not options.no_check else None,
            launch=asked, nodes=nodes_wanted(options.nodes, Resources()),  # a script's: script_job's defaults
            gpus_per_task=options.gpus_per_task, gpus=options.gpus)
        from orchestrator.doctor.frameworks import script_frameworks

        target = target.model_copy(update={"launch": style, "frameworks": script_frameworks(target)})
        if findings is not None:
            findings.extend(found)
    loaded = script_job(target) if target is not None else load_job(str(options.job), environ, cwd)
    named = {dest: getattr(options, dest) for dest in NAMED_OPTIONS}
    sbatch_items = (_items(options.sbatch_args, flag=True) if isinstance(options.sbatch_args, Mapping)
                    else list(options.sbatch_args))
    env_items = _items(options.env) if isinstance(options.env, Mapping) else list(options.env)
    templates = str(options.templates) if options.templates else None
    request = make_request({
        "script": target, "gpus_per_task": options.gpus_per_task,
        "sbatch_extra": parse_sbatch_args(named, sbatch_items),
        "env": parse_env_args(env_items), "pass_env": parse_pass_env([options.pass_env] if isinstance(
            options.pass_env, str) else list(options.pass_env)),
        "snapshot": False if options.no_snapshot else None,
        "container_runtime": options.container_runtime, "container_image": options.container_image,
        "container_mounts": list(options.container_mounts), "preflight": options.preflight,
        "max_restarts": options.max_restarts, "spare_nodes": options.spare_nodes, "world_check": options.world_check,
        "collective_timeout": options.collective_timeout,
        "job": options.job if options.job is not None else f"-m {options.module}",
        "nodes": options.nodes, "gpus": options.gpus, "ntasks_per_node": options.ntasks_per_node,
        "cpus_per_task": options.cpus_per_task, "partition": options.partition, "time": options.time,
        "job_name": options.job_name, "account": options.account, "qos": options.qos,
        "overrides": dict(raw) if isinstance(raw, Mapping) else parse_overrides(items),
        "templates": os.path.normpath(cwd / Path(templates).expanduser()) if templates else None,
        "data_dir": resolve_data_dir(options.data_dir, environ, cwd),
    })
    return request, loaded


def submit_options(values: Mapping[str, Any]) -> SubmitOptions:
    """``orch submit``'s parsed arguments (``vars(args)``) as options, each by its argparse dest (the table of
    :mod:`orchestrator.spec.options`: ``--sbatch-arg`` -> ``sbatch_args``)."""
    from orchestrator.spec.options import BY_NAME

    picked = {name: values[BY_NAME[name].key] for name in OPTION_NAMES if values.get(BY_NAME[name].key) is not None}
    return SubmitOptions(**picked)


def _items(mapping: Mapping[str, Any], *, flag: bool = False) -> list[str]:
    """A mapping as command-line items: ``KEY=VALUE``, or ``KEY`` alone for a flag (True/None)."""
    out = []
    for key, value in mapping.items():
        if value is False and flag:
            continue
        out.append(key if flag and (value is True or value is None) else f"{key}={value}")
    return out


def new_plan(request: SubmitRequest, cluster: Cluster, loaded: LoadedJob, cwd: Path, *,
             now: datetime | None = None, token: str | None = None) -> SubmitPlan:
    """``build_plan`` with this moment's values: now (in UTC, whatever TZ says), a random token, the python of
    ``launcher.python`` (else this one) and the job root resolved against ``cwd``. ``now`` and ``token``
    given: the plan made with them before, again (``orch mcp``'s submit of a stored plan)."""
    from orchestrator.slurm.nodememory import leave_out

    root = Path(os.path.normpath(cwd / job_root(cluster)))
    # nodes recorded as bad within launcher.bad_node_ttl join --exclude (slurm/nodememory.py)
    extra, left_out = leave_out(request.sbatch_extra, cluster, request.partition or loaded.spec.resources.partition,
                                nodes_wanted(request.nodes, loaded.spec.resources), root)
    if extra != request.sbatch_extra:
        request = request.model_copy(update={"sbatch_extra": extra})
    plan = build_plan(request, cluster, loaded, python=cluster.launcher.python or sys.executable,
                      now=now or datetime.now(timezone.utc), token=token or os.urandom(3).hex(), job_root=root)
    return replace(plan, left_out=left_out)


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


def data_dir_problem(job_name: str, needs_data: bool, data_dir: str | None) -> ConfigError | None:
    """A job that reads a dataset needs an existing data directory (checked here, not hours later)."""
    if data_dir is not None and not Path(data_dir).is_dir():
        return ConfigError(f"the data directory {data_dir} does not exist",
                           hint=f"pass --data-dir DIR (or set {DATA_DIR_ENV_VAR}) with an existing folder")
    if needs_data and data_dir is None:
        return ConfigError(f"job {job_name} needs a data directory, and none was given",
                           hint=f"pass --data-dir DIR or set {DATA_DIR_ENV_VAR}=DIR")
    return None


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
