"""Submit options -> one validated request and its job, with the values settled once (:class:`Request`).

``orch submit``, ``orchestrator.submit()``/``sweep()``/``run()`` and ``orch mcp``'s plan tool all pass their
options through :func:`request_of`: a script or ``-m`` module is resolved and checked by ``orch doctor`` (its
errors refuse it unless ``no_check`` or a dry run), a job file is loaded, and the nodes, partition, GPUs and a
script's launch style are settled once (:class:`~orchestrator.slurm.plan.Resolved`): the doctor gate, the
bad-node exclusion and the plan read those, never the flags again (:mod:`orchestrator.service.plan`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.errors import ConfigError
from orchestrator.slurm.plan import Resolved, SubmitRequest, make_request, resolve
from orchestrator.spec.cluster import Cluster
from orchestrator.spec.datadir import resolve_data_dir
from orchestrator.spec.job import LoadedJob, parse_overrides

if TYPE_CHECKING:
    from orchestrator.doctor.findings import Finding
    from orchestrator.spec.script import ScriptTarget

__all__ = ["OPTION_NAMES", "Request", "SubmitOptions", "SubmitRequest", "cluster_of", "request_of", "submit_options",
           "with_cluster"]


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


def submit_options(values: Mapping[str, Any]) -> SubmitOptions:
    """``orch submit``'s parsed arguments (``vars(args)``) as options, each by its argparse dest (the table of
    :mod:`orchestrator.spec.options`: ``--sbatch-arg`` -> ``sbatch_args``)."""
    from orchestrator.spec.options import BY_NAME

    picked = {name: values[BY_NAME[name].key] for name in OPTION_NAMES if values.get(BY_NAME[name].key) is not None}
    return SubmitOptions(**picked)


def cluster_of(named: str | Path | Cluster | None, cwd: Path, *, required: bool = True,
               track: Sequence[str] = ()) -> Cluster | None:
    """The cluster a submit plans for: a Cluster as given, else the file ``--cluster``/``cluster=`` names (a path
    or a named file), ``$ORCH_CLUSTER``, ``./cluster.yaml`` (None: none there and not ``required``); ``track``
    (``--track``) adds to its ``tracking``."""
    from orchestrator.records.cache import find_cluster
    from orchestrator.spec.tracking import merge_tracking

    cluster = named if isinstance(named, Cluster) else find_cluster(named, os.environ, cwd, required=required)
    if cluster is not None and track:
        cluster = cluster.model_copy(update={"tracking": merge_tracking(cluster.tracking, list(track))})
    return cluster


def with_cluster(options: SubmitOptions, cluster: Cluster | None) -> SubmitOptions:
    """The options as the submit runs them: the doctor also leaves out cluster.yaml's ``doctor.ignore``."""
    if cluster is None or not cluster.doctor.ignore:
        return options
    return replace(options, ignore=[*options.ignore, *cluster.doctor.ignore])


@dataclass(frozen=True)
class Request:
    """Submit options made into a validated request and its job, the values settled once, and what ``orch
    doctor`` found in a script (each shown on stderr already)."""

    request: SubmitRequest
    loaded: LoadedJob
    resolved: Resolved
    findings: tuple[Finding, ...] = ()


def request_of(options: SubmitOptions, *, cwd: Path, environ: Mapping[str, str], search: Sequence[Path],
               dry_run: bool = False) -> Request:
    """The one translation of submit options into a validated request and its job (CLI, API and MCP alike).

    Resolves a script or ``-m`` module (``search``: where modules are looked for after ``cwd``) and
    runs ``orch doctor`` on a script (its errors refuse it unless ``no_check`` or ``dry_run``: then
    they are only shown), else loads the job file. ConfigError names the field.
    """
    from orchestrator.records.codetrust import check_launch
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
    findings: list[Finding] = []
    if target is not None:
        target, resolved, findings = _gate(target, options, asked, dry_run)
        loaded = script_job(target)
    else:
        loaded = load_job(str(options.job), environ, cwd)
        resolved = resolve(options, loaded.spec.resources)
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
    return Request(request=request, loaded=loaded, resolved=resolved, findings=tuple(findings))


def _gate(target: ScriptTarget, options: SubmitOptions, asked: str,
          dry_run: bool) -> tuple[ScriptTarget, Resolved, list[Finding]]:
    """A script: its values settled (its job's resources: ``script_job``'s defaults), ``orch doctor``'s gate on
    them, and the launch style the gate settles (a job file: the doctor stays unimported)."""
    from orchestrator.doctor.frameworks import script_frameworks
    from orchestrator.doctor.gate import check_script
    from orchestrator.spec.doctorcodes import parse_codes
    from orchestrator.spec.script import script_job

    settled = resolve(options, script_job(target).spec.resources)
    found, style = check_script(target, refuse=not (options.no_check or dry_run), ignore=parse_codes(
        options.ignore, "--ignore"), would_refuse="orch submit" if dry_run and not options.no_check else None,
        launch=asked, nodes=settled.nodes, gpus_per_task=settled.gpus_per_task, gpus=settled.gpus)
    target = target.model_copy(update={"launch": style, "frameworks": script_frameworks(target)})
    return target, replace(settled, launch=style), found


def _items(mapping: Mapping[str, Any], *, flag: bool = False) -> list[str]:
    """A mapping as command-line items: ``KEY=VALUE``, or ``KEY`` alone for a flag (True/None)."""
    out = []
    for key, value in mapping.items():
        if value is False and flag:
            continue
        out.append(key if flag and (value is True or value is None) else f"{key}={value}")
    return out
