"""``orch mcp``'s ``plan`` and ``submit``: a submit is a checked plan, queued exactly as planned.

``plan`` runs what ``orch submit --dry-run --json`` runs (the same request, the doctor on a script,
cluster.yaml's checks of the resources, the snapshot preview), stores the plan
(:mod:`orchestrator.records.plans`) with a hash of each input (the code: the snapshot's digest when the
submit takes one, else the job file's or script's own; the cluster file), and returns the exact batch
script, every rank, the findings, what would stop the submit, and a plan id.

``submit`` takes only a plan id. It refuses an unknown id, a plan submitted before, and a stale plan: an
input whose hash changed (named), or a batch script or ``job.json`` that would now differ from the plan's
(the request is built again through the submit's own path, with the plan's time and token, so the job
folder is the planned one). Then it queues through :func:`orchestrator.slurm.submission.queue`, the
function ``orch submit`` uses: the job folder and its records are as from ``orch submit``.
Nothing here imports the MCP SDK (``_mcp_server.py`` does).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
from dataclasses import dataclass, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from orchestrator.errors import ConfigError, OrchError
from orchestrator.records import plans
from orchestrator.records.cache import load_cluster
from orchestrator.spec.cluster import find_cluster_file
from orchestrator.spec.options import MCP, Option, options_of
from orchestrator.spec.runconfig import RunConfig

_CHUNK = 1 << 20
CODE_SNAPSHOT = "code snapshot of "  # the input name of the code when the submit takes a snapshot


@dataclass(frozen=True)
class Settings:
    """How ``orch mcp`` was started: its cluster file (``--cluster``), what it may change, where it runs."""

    cluster: str | None
    allow_submit: bool
    allow_cancel: bool
    cwd: Path


# the switch each changing tool needs: tool -> (the flag, what it lets an agent do)
SWITCHES = {"submit": ("--allow-submit", "queue jobs"), "cancel": ("--allow-cancel", "cancel or signal jobs")}


def require(allowed: bool, tool: str) -> None:
    """The refusal of a changing tool on a server started without its switch."""
    if not allowed:
        flag, what = SWITCHES[tool]
        raise OrchError(f"the {tool} tool is off: this orch mcp server is read-only for it (started without {flag})",
                        hint=f"to let an agent {what}, start the server as 'orch mcp {flag}' (the args of its "
                             "entry in the client's mcpServers configuration); plan, status, list, logs, nodes and "
                             "doctor work without it")


def _field(option: Option) -> tuple[Any, Any]:
    """The MCP field of an option (its annotation and default), from its kind in the table."""
    annotation: Any
    if option.literal is not None:
        annotation = Literal[option.literal] | None
    else:
        annotation = {"int": int | None, "flag": bool, "list": list[str]}.get(option.kind, str | None)
    if option.kind == "list" and option.default is None:  # script_args: None when no -- was given
        annotation = list[str] | None
    if option.kind == "list" and option.default is not None:
        return annotation, Field(default_factory=list, description=option.describe)
    default = False if option.kind == "flag" else None
    return annotation, Field(default=default, description=option.describe)


def plan_model() -> type[BaseModel]:
    """What the plan tool takes: the table's options of ``orch mcp`` (a subset of ``orch submit``'s), by
    their option names (:mod:`orchestrator.spec.options`)."""
    fields_: dict[str, Any] = {option.name: _field(option) for option in options_of(MCP)}
    return create_model("PlanInput", __config__=ConfigDict(extra="forbid"), __doc__=plan_model.__doc__, **fields_)


PlanInput = plan_model()


def plan_signature() -> inspect.Signature:
    """The plan tool's parameters (what an agent sees): PlanInput's fields, a list left out as None."""
    params = []
    for name, info in PlanInput.model_fields.items():
        listed = info.default_factory is not None
        annotation: Any = info.annotation
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                        annotation=annotation | None if listed else annotation,
                                        default=None if listed else info.default))
    return inspect.Signature(params, return_annotation=dict[str, Any])


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
    except OSError as exc:
        return f"unreadable: {exc.strerror or type(exc).__name__}"
    return digest.hexdigest()


def fingerprint(config: RunConfig, cluster_file: Path, snapshot: bool | None) -> dict[str, str]:
    """Input name -> hash: the cluster file, and the code (the snapshot's digest when the submit takes one,
    else the job file or the script itself; a ``-m`` module without a snapshot is not hashed)."""
    from orchestrator.records.snapshots.preview import code_digest
    from orchestrator.records.snapshots.store import source_of

    inputs = {f"cluster file {cluster_file}": _sha256(cluster_file)}
    try:
        digest = code_digest(config, snapshot)
    except ConfigError as exc:  # too large to snapshot: the submit says so; the hash says it changed
        digest = f"no snapshot: {exc.message}"
    if digest is not None:
        inputs[f"{CODE_SNAPSHOT}{source_of(config)}"] = digest
        return inputs
    script = config.script
    if script is None:
        inputs[f"job file {config.job_file}"] = _sha256(Path(config.job_file))
    elif script.kind == "script":
        inputs[f"script {script.target}"] = _sha256(Path(script.target))
    return inputs


def _options(given: BaseModel, cluster_ignore: list[str]) -> Any:
    from orchestrator.slurm.submission import SubmitOptions

    names = {f.name for f in fields(SubmitOptions)}
    values = {k: v for k, v in given.model_dump().items() if k in names and v is not None}
    values["ignore"] = [*values.get("ignore", ()), *cluster_ignore]
    return SubmitOptions(**values)


def _build(options: Any, cluster: Any, cwd: Path, *, dry_run: bool, now: datetime | None = None,
           token: str | None = None, findings: list[Any] | None = None) -> tuple[Any, Any]:
    """The submit's own path: options -> request (the doctor on a script) -> plan; and the loaded job."""
    from orchestrator.slurm.submission import build_request, new_plan

    request, loaded = build_request(options, cwd=cwd, environ=os.environ, search=[Path(p) for p in sys.path if p],
                                    dry_run=dry_run, findings=findings)
    return new_plan(request, cluster, loaded, cwd, now=now, token=token), loaded


def check_local(cluster: Any, where: str) -> None:
    """orch mcp serves where the jobs are: a cluster file that submits over SSH is refused."""
    if cluster is not None and cluster.remote is not None:
        raise ConfigError(f"the cluster file {where} submits over SSH (remote:); orch mcp serves where the jobs are",
                          hint="run orch mcp on the cluster's login node: the client's command can be "
                               "ssh LOGIN orch mcp")


def _cluster(settings: Settings) -> tuple[Path, Any]:
    path = find_cluster_file(settings.cluster, os.environ, settings.cwd)
    cluster = load_cluster(path)
    check_local(cluster, str(path))
    return path, cluster


def make_plan(settings: Settings, given: BaseModel) -> dict[str, Any]:
    """The plan tool: dry run + doctor + cluster.yaml's checks, stored; its id and everything it decided."""
    from orchestrator.commands.submit import dry_run_json, snapshot_preview
    from orchestrator.doctor.findings import refuses
    from orchestrator.slurm.submission import check_pass_env, data_dir_problem

    cluster_path, cluster = _cluster(settings)
    options = _options(given, list(cluster.doctor.ignore))
    findings: list[Any] = []
    now, token = datetime.now(timezone.utc), os.urandom(3).hex()
    plan, loaded = _build(options, cluster, settings.cwd, dry_run=True, now=now, token=token, findings=findings)
    snap = snapshot_preview(plan, cluster)
    refusals = [f"orch doctor: {f.file}:{f.line}: {f.code} {f.message}" for f in findings
                if refuses(f) and not options.no_check]
    problem = data_dir_problem(loaded.spec.name, loaded.spec.needs_data, plan.request.data_dir)
    if problem is not None:
        refusals.append(problem.render())
    if snap.problem is not None:
        refusals.append(f"code snapshot: {snap.problem}")
    try:
        check_pass_env(plan.run_config.launcher.pass_env, os.environ)
    except ConfigError as exc:
        refusals.append(exc.render())
    taken = snap.off is None and snap.problem is None
    inputs = fingerprint(plan.run_config, cluster_path, plan.request.snapshot if taken else False)
    digest = next((value for name, value in inputs.items() if name.startswith(CODE_SNAPSHOT)), None)
    stored = plans.StoredPlan(
        plan_id=plans.new_id(), created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        cwd=str(settings.cwd), cluster_file=str(cluster_path), options=_jsonable(options), now=now.isoformat(),
        token=token, script=plan.script, run_config=plan.run_config.model_dump(mode="json"), inputs=inputs,
        snapshot=taken, digest=digest)
    plans.save(stored)
    return {"plan_id": stored.plan_id, "submittable": not refusals, "refusals": refusals,
            "cluster_file": str(cluster_path), "job_dir": str(plan.job_dir), "resources": plan.resources,
            "inputs": inputs, "task_env": plan.run_config.env, "pass_env": plan.run_config.launcher.pass_env,
            **json.loads(dry_run_json(plan, findings, snap))}


def _jsonable(options: Any) -> dict[str, Any]:
    return {f.name: getattr(options, f.name) for f in fields(options)
            if isinstance(getattr(options, f.name), (str, int, bool, list, tuple, dict))}


def _first_difference(old: str, new: str) -> str:
    for number, (a, b) in enumerate(zip(old.splitlines(), new.splitlines(), strict=False), start=1):
        if a != b:
            return f"line {number}: planned {a!r}, now {b!r}"
    return f"planned {len(old.splitlines())} lines, now {len(new.splitlines())}"


def stale_error(plan_id: str, changed: list[str]) -> ConfigError:
    return ConfigError(f"plan {plan_id} is stale: changed since it was planned: {'; '.join(changed)}",
                       hint="call plan again (it shows the new script and ranks) and submit the new plan_id")


def submit_plan(settings: Settings, plan_id: str) -> dict[str, Any]:
    """The submit tool: queue the stored plan, unchanged, once."""
    from orchestrator.records.snapshots.store import snapshot_config
    from orchestrator.slurm.submission import SubmitOptions, data_dir_problem, queue

    require(settings.allow_submit, "submit")
    stored = plans.load(plan_id)
    done = plans.submitted_as(plan_id)
    if done is not None:
        raise plans.already_submitted(plan_id, done)
    config = RunConfig.model_validate(stored.run_config)
    now = fingerprint(config, Path(stored.cluster_file), None if stored.snapshot else False)
    changed = [f"{name} ({_short(was)} -> {_short(now.get(name))})" for name, was in stored.inputs.items()
               if now.get(name) != was]
    if changed:
        raise stale_error(plan_id, changed)
    cluster = load_cluster(Path(stored.cluster_file))
    plan, loaded = _build(SubmitOptions(**stored.options), cluster, Path(stored.cwd), dry_run=False,
                          now=datetime.fromisoformat(stored.now), token=stored.token)
    if plan.script != stored.script:
        raise stale_error(plan_id, [f"the batch script would differ ({_first_difference(stored.script, plan.script)})"])
    if plan.run_config.model_dump(mode="json") != stored.run_config:
        keys = sorted(k for k, v in plan.run_config.model_dump(mode="json").items() if stored.run_config.get(k) != v)
        raise stale_error(plan_id, [f"job.json would differ ({', '.join(keys)})"])
    problem = data_dir_problem(loaded.spec.name, loaded.spec.needs_data, plan.request.data_dir)
    if problem is not None:
        raise problem
    # the snapshot is taken here, before the claim: the job runs the very code the plan hashed, or nothing
    config = snapshot_config(plan.run_config, plan.request.snapshot if stored.snapshot else False)
    taken = config.snapshot.digest if config.snapshot is not None else None
    if taken != stored.digest:
        raise stale_error(plan_id, [f"the code, while the submit took its snapshot ({_short(stored.digest)} -> "
                                    f"{_short(taken)})"])
    plan = replace(plan, run_config=config, request=plan.request.model_copy(update={"snapshot": False}))
    plans.claim(plan_id)
    try:
        job_id = queue(plan, os.environ)  # orch submit's own: the job folder, sbatch, the records
    except OrchError as exc:
        if not plan.job_dir.exists():  # stopped before the folder was written: the plan may be submitted again
            plans.release(plan_id)
            raise
        raise type(exc)(f"{exc.message} (the job was not queued; its folder is {plan.job_dir})",
                        hint=exc.hint) from None
    plans.record_job(plan_id, job_id, str(plan.job_dir))
    left_out = plan.left_out.lines() if plan.left_out is not None else []
    return {"plan_id": plan_id, "job_id": job_id, "job_dir": str(plan.job_dir), "resources": plan.resources,
            "left_out": left_out}


def _short(value: str | None) -> str:
    if value is None:
        return "gone"
    return value[:12] if len(value) == 64 else value
