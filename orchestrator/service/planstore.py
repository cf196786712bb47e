"""Plans stored for a later submit (``orch mcp``'s plan and submit tools): a submit is a checked plan, queued
exactly as planned, once.

:func:`store_plan` plans as ``orch submit --dry-run`` does (:func:`orchestrator.service.plan.prepare`: the same
request, the doctor on a script, cluster.yaml's checks, the snapshot preview), names what would stop the submit,
and stores the plan (:mod:`orchestrator.records.plans`) with a hash of each input (the code: the snapshot's
digest when the submit takes one, else the job file's or script's own; the cluster file).

:func:`submit_stored` refuses a plan submitted before and a stale plan: an input whose hash changed (named), or
a batch script or ``job.json`` that would now differ from the plan's (the plan is made again through the
submit's own path, with the plan's time and token, so the job folder is the planned one). Then it queues through
:func:`orchestrator.service.queue.queue`, as ``orch submit`` does.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from orchestrator.errors import ConfigError, OrchError
from orchestrator.records import plans
from orchestrator.records.cache import load_cluster
from orchestrator.service.plan import Planned, prepare
from orchestrator.service.queue import Queued, check_pass_env, queue
from orchestrator.service.request import SubmitOptions
from orchestrator.spec.cluster import Cluster
from orchestrator.spec.clusterfiles import find_cluster_file
from orchestrator.spec.runconfig import RunConfig

__all__ = ["CODE_SNAPSHOT", "Stored", "check_local", "cluster_at", "fingerprint", "stale_error", "store_plan",
           "submit_stored"]

_CHUNK = 1 << 20
CODE_SNAPSHOT = "code snapshot of "  # the input name of the code when the submit takes a snapshot


@dataclass(frozen=True)
class Stored:
    """A plan stored under ``plan_id``: what it planned, what would stop its submit, the hashes of its inputs."""

    plan_id: str
    planned: Planned
    cluster_file: Path
    refusals: tuple[str, ...]
    inputs: dict[str, str]


def check_local(cluster: Cluster | None, where: str) -> None:
    """orch mcp serves where the jobs are: a cluster file that submits over SSH is refused."""
    if cluster is not None and cluster.remote is not None:
        raise ConfigError(f"the cluster file {where} submits over SSH (remote:); orch mcp serves where the jobs are",
                          hint="run orch mcp on the cluster's login node: the client's command can be "
                               "ssh LOGIN orch mcp")


def cluster_at(named: str | None, cwd: Path) -> tuple[Path, Cluster]:
    """The cluster file in use (``--cluster``, ``$ORCH_CLUSTER``, ./cluster.yaml) and its cluster, local only."""
    path = find_cluster_file(named, os.environ, cwd)
    cluster = load_cluster(path)
    check_local(cluster, str(path))
    return path, cluster


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


def store_plan(options: SubmitOptions, named: str | None, cwd: Path) -> Stored:
    """Plan (dry run + doctor + cluster.yaml's checks), name what would stop the submit, store the plan."""
    from orchestrator.doctor.findings import refuses

    cluster_path, cluster = cluster_at(named, cwd)
    now, token = datetime.now(timezone.utc), os.urandom(3).hex()
    planned = prepare(options, cluster, cwd, dry_run=True, preview=True, now=now, token=token)
    plan, snap = planned.plan, planned.snapshot
    assert snap is not None  # preview=True
    refusals = [f"orch doctor: {f.file}:{f.line}: {f.code} {f.message}" for f in planned.findings
                if refuses(f) and not options.no_check]
    if planned.data_problem is not None:
        refusals.append(planned.data_problem.render())
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
        cwd=str(cwd), cluster_file=str(cluster_path), options=_jsonable(planned.options), now=now.isoformat(),
        token=token, script=plan.script, run_config=plan.run_config.model_dump(mode="json"), inputs=inputs,
        snapshot=taken, digest=digest)
    plans.save(stored)
    return Stored(plan_id=stored.plan_id, planned=planned, cluster_file=cluster_path, refusals=tuple(refusals),
                  inputs=inputs)


def _jsonable(options: SubmitOptions) -> dict[str, Any]:
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


def submit_stored(plan_id: str) -> Queued:
    """Queue the stored plan, unchanged, once."""
    from orchestrator.records.snapshots.store import snapshot_config

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
    planned = prepare(SubmitOptions(**stored.options), cluster, Path(stored.cwd),
                      now=datetime.fromisoformat(stored.now), token=stored.token)
    plan = planned.plan
    if plan.script != stored.script:
        raise stale_error(plan_id, [f"the batch script would differ ({_first_difference(stored.script, plan.script)})"])
    if plan.run_config.model_dump(mode="json") != stored.run_config:
        keys = sorted(k for k, v in plan.run_config.model_dump(mode="json").items() if stored.run_config.get(k) != v)
        raise stale_error(plan_id, [f"job.json would differ ({', '.join(keys)})"])
    planned.check_data()
    # the snapshot is taken here, before the claim: the job runs the very code the plan hashed, or nothing
    config = snapshot_config(plan.run_config, plan.request.snapshot if stored.snapshot else False)
    taken = config.snapshot.digest if config.snapshot is not None else None
    if taken != stored.digest:
        raise stale_error(plan_id, [f"the code, while the submit took its snapshot ({_short(stored.digest)} -> "
                                    f"{_short(taken)})"])
    plan = replace(plan, run_config=config, request=plan.request.model_copy(update={"snapshot": False}))
    plans.claim(plan_id)
    try:
        queued = queue(replace(planned, plan=plan))  # orch submit's own: the job folder, sbatch, the records
    except OrchError as exc:
        if not plan.job_dir.exists():  # stopped before the folder was written: the plan may be submitted again
            plans.release(plan_id)
            raise
        raise type(exc)(f"{exc.message} (the job was not queued; its folder is {plan.job_dir})",
                        hint=exc.hint) from None
    plans.record_job(plan_id, queued.job_id, str(plan.job_dir))
    return queued


def _short(value: str | None) -> str:
    if value is None:
        return "gone"
    return value[:12] if len(value) == 64 else value
