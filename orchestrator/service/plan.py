"""Plan a submit: the first half of ``orch submit``, all of its ``--dry-run``, and what ``orchestrator.submit()``
and ``orch mcp``'s plan tool run before they queue (:mod:`orchestrator.service.queue` is the second half).

:func:`prepare` takes the submit options and the cluster and returns a :class:`Planned`: the request
(:mod:`orchestrator.service.request`), the plan made with this moment's values (:func:`new_plan`: the bad-node
exclusion and ``slurm.plan.build_plan``, both reading the request's settled values), and what the dry run shows
beside it (the code snapshot the submit would take, the run's time budget, the data directory's problem, the
templates used). :func:`dry_run_json` is the dry run's JSON (``orch submit --dry-run --json`` and the MCP plan
tool). Nothing here prints.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.errors import ConfigError
from orchestrator.service.request import Request, SubmitOptions, request_of, with_cluster
from orchestrator.slurm.plan import Resolved, SubmitPlan, SubmitRequest, build_plan, resolve
from orchestrator.spec.cluster import Cluster
from orchestrator.spec.datadir import DATA_DIR_ENV_VAR
from orchestrator.spec.job import LoadedJob

if TYPE_CHECKING:
    from orchestrator.doctor.findings import Finding
    from orchestrator.records.snapshots.preview import SnapshotPreview
    from orchestrator.slurm.submission import ArrayPlan
    from orchestrator.spec.budget import Budget

__all__ = ["RANK_KEYS", "Planned", "SnapshotPreview", "SubmitPlan", "data_dir_problem", "dry_run_json", "new_plan",
           "plan_budget", "prepare", "restarts_of", "snapshot_preview", "sweep_dry_run_json"]

RANK_KEYS = ("rank", "local_rank", "node_rank", "host", "world_size", "local_world_size",
             "master_addr", "master_port", "devices")  # the JSON of each rank in --dry-run --json


@dataclass(frozen=True)
class Planned:
    """What a submit planned: ``options`` as run (cluster.yaml's ``doctor.ignore`` added), the request, the plan,
    and beside it what the dry run shows (None where not asked for: ``prepare``'s ``preview``/``budget``)."""

    options: SubmitOptions
    asked: Request
    plan: SubmitPlan
    snapshot: SnapshotPreview | None = None
    budget: Budget | None = None
    data_problem: ConfigError | None = None  # a job that reads data without an existing data directory
    templates: Mapping[str, Path] = field(default_factory=dict)  # template name -> the file it comes from

    @property
    def loaded(self) -> LoadedJob:
        return self.asked.loaded

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.asked.findings

    @property
    def resolved(self) -> Resolved:
        return self.asked.resolved

    def check_data(self) -> None:
        """Refuse (before anything is written) a job that reads data without a data directory."""
        if self.data_problem is not None:
            raise self.data_problem


def prepare(options: SubmitOptions, cluster: Cluster, cwd: Path, *, dry_run: bool = False, preview: bool = False,
            budget: bool = False, environ: Mapping[str, str] | None = None, now: datetime | None = None,
            token: str | None = None) -> Planned:
    """Options -> request (``orch doctor`` on a script; ``dry_run``: its errors only shown) -> plan; ``preview``:
    with the code snapshot the submit would take and the templates used; ``budget``: with the run's time budget.
    ``now``/``token``: the plan made with them before, again (a stored plan's submit)."""
    environ = os.environ if environ is None else environ
    options = with_cluster(options, cluster)
    asked = request_of(options, cwd=cwd, environ=environ, search=[Path(p) for p in sys.path if p], dry_run=dry_run)
    plan = new_plan(asked.request, cluster, asked.loaded, cwd, resolved=asked.resolved, now=now, token=token)
    snap = snapshot_preview(plan, cluster) if preview else None
    figures = plan_budget(plan, cluster) if budget else None
    spec = asked.loaded.spec
    templates: Mapping[str, Path] = {}
    if preview and plan.request.templates is not None:
        from orchestrator.slurm.render import template_sources

        templates = template_sources(plan.request.templates)
    return Planned(options=options, asked=asked, plan=plan, snapshot=snap, budget=figures, templates=templates,
                   data_problem=data_dir_problem(spec.name, spec.needs_data, plan.request.data_dir))


def new_plan(request: SubmitRequest, cluster: Cluster, loaded: LoadedJob, cwd: Path, *,
             resolved: Resolved | None = None, now: datetime | None = None, token: str | None = None) -> SubmitPlan:
    """``build_plan`` with this moment's values: now (in UTC, whatever TZ says), a random token, the python of
    ``launcher.python`` (else this one) and the job root resolved against ``cwd``. ``now`` and ``token``
    given: the plan made with them before, again (``orch mcp``'s submit of a stored plan). ``resolved``: the
    request's settled values (None: settled here); the bad-node exclusion and the plan read the same ones."""
    from orchestrator.records.joblayout import job_root
    from orchestrator.slurm.nodememory import leave_out

    if resolved is None:
        resolved = resolve(request, loaded.spec.resources, request.script.launch if request.script else None)
    root = Path(os.path.normpath(cwd / job_root(cluster)))
    # nodes recorded as bad within launcher.bad_node_ttl join --exclude (slurm/nodememory.py)
    extra, left_out = leave_out(request.sbatch_extra, cluster, resolved.partition, resolved.nodes, root)
    if extra != request.sbatch_extra:
        request = request.model_copy(update={"sbatch_extra": extra})
    plan = build_plan(request, cluster, loaded, python=cluster.launcher.python or sys.executable,
                      now=now or datetime.now(timezone.utc), token=token or os.urandom(3).hex(), job_root=root,
                      resolved=resolved)
    return replace(plan, left_out=left_out)


def plan_budget(plan: SubmitPlan, cluster: Cluster) -> Budget:
    """The run's time budget from the earlier runs of its job under the job root (records/history.py)."""
    from orchestrator.records.history import job_budget

    cfg = plan.run_config
    limit = cluster.partition(cfg.partition).max_time_seconds if cfg.partition else None
    return job_budget(cfg, plan.job_dir.parent, max_time_s=limit)


def snapshot_preview(plan: SubmitPlan, cluster: Cluster) -> SnapshotPreview:
    """The code snapshot the submit would take (read-only: records/snapshots/preview.py); a remote cluster's
    orch takes it there."""
    from orchestrator.records.snapshots.preview import SnapshotPreview, preview

    if cluster.remote is not None:
        return SnapshotPreview(off="taken on the cluster by its orch at submit (--remote-check shows it)")
    return preview(plan.run_config, plan.request.snapshot)


def data_dir_problem(job_name: str, needs_data: bool, data_dir: str | None) -> ConfigError | None:
    """A job that reads a dataset needs an existing data directory (checked here, not hours later)."""
    if data_dir is not None and not Path(data_dir).is_dir():
        return ConfigError(f"the data directory {data_dir} does not exist",
                           hint=f"pass --data-dir DIR (or set {DATA_DIR_ENV_VAR}) with an existing folder")
    if needs_data and data_dir is None:
        return ConfigError(f"job {job_name} needs a data directory, and none was given",
                           hint=f"pass --data-dir DIR or set {DATA_DIR_ENV_VAR}=DIR")
    return None


def restarts_of(plan: SubmitPlan) -> tuple[str, str] | None:
    """How the plan's training step restarts a failed rank: (``in-process`` or ``step``, in words), as its tasks
    will decide it (``restarts/protocol.py``, with the MASTER_ADDR the plan gives them); None: max_restarts 0."""
    from orchestrator.env.taskenv import is_loopback
    from orchestrator.restarts.protocol import how_restarted

    head = plan.ranks[0].env
    return how_restarted(plan.run_config, loopback=is_loopback(head.master_addr), master_port=head.master_port)


def dry_run_json(plan: SubmitPlan, findings: Sequence[Finding] = (), snap: SnapshotPreview | None = None,
                 budget: Budget | None = None) -> str:
    """``{"script": ..., "restarts": ..., "assumed_job_id": ..., "findings": [...], "snapshot": ..., "ranks": [...]}``
    with one rank per line (``restarts``: ``max_restarts``, ``kind`` and ``how``, :func:`restarts_of`;
    ``findings``: orch doctor's on the script, each ``{code, severity, file, line, message, fix}``;
    ``snapshot``: the code snapshot the submit would take, records/snapshots/preview.py).

    Built from per-rank ``json.dumps`` calls (the C encoder; ``indent=`` would switch to the slow
    pure-Python one, which takes ~0.15 s for 8,192 ranks).
    """
    dumps = json.dumps
    ranks = []
    for row in plan.ranks:
        values = row.as_dict()
        ranks.append(dumps({key: values[key] for key in RANK_KEYS}))
    target = plan.run_config.script
    runs = ({"kind": "job", "job": plan.run_config.job_name, "job_file": plan.run_config.job_file} if target is None
            else {**target.model_dump(mode="json"), "command": target.command(), "note": target.note(),
                  "workdir": target.cwd})  # every rank's working directory: the submit directory
    how = restarts_of(plan)
    restarts = {"max_restarts": plan.run_config.launcher.max_restarts, "kind": how[0] if how else None,
                "how": how[1] if how else None}
    return (f'{{"script": {dumps(plan.script)},\n "runs": {dumps(runs)},\n "restarts": {dumps(restarts)},\n'
            f' "assumed_job_id": {dumps(plan.assumed_job_id)},\n'
            f' "findings": {dumps([f.as_dict() for f in findings])},\n'
            f' "bad_nodes": {dumps(plan.left_out.as_dict() if plan.left_out is not None else None)},\n'
            f' "snapshot": {dumps(snap.as_dict() if snap is not None else None)},\n'
            f' "budget": {dumps(budget.as_dict() if budget is not None else None)},\n'
            f' "ranks": [\n  ' + ",\n  ".join(ranks) + "\n ]}\n")


def sweep_dry_run_json(array: ArrayPlan, snap: SnapshotPreview | None = None, budget: Budget | None = None) -> str:
    """``{"script", "array", "elements": [{"index", "job_dir", "overrides", "params"}], "snapshot", "budget",
    "ranks"}``."""
    ranks = json.loads(dry_run_json(array.plan, (), snap, budget))
    elements = [{"index": e.index, "job_dir": str(e.job_dir), "overrides": e.overrides,
                 "params": e.run_config.params} for e in array.elements]
    return json.dumps({"script": array.script, "array": array.plan.context.array, "elements": elements,
                       "assumed_job_id": ranks["assumed_job_id"], "snapshot": ranks["snapshot"],
                       "budget": ranks["budget"],
                       "ranks": ranks["ranks"]}, indent=1) + "\n"
