"""``orch mcp``'s ``plan`` and ``submit``: a submit is a checked plan, queued exactly as planned.

``plan`` runs what ``orch submit --dry-run --json`` runs and stores the plan; ``submit`` takes only a plan id
and queues the stored plan once, unless it is stale (:mod:`orchestrator.service.planstore` does both, through
the submit's own :mod:`orchestrator.service.plan` and :mod:`orchestrator.service.queue`). Here: the plan tool's
input (the table's MCP options, :mod:`orchestrator.spec.options`), the switches a changing tool needs, and the
tools' answers. Nothing here imports the MCP SDK (``_mcp_server.py`` does).
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from orchestrator.errors import OrchError
from orchestrator.service.plan import dry_run_json
from orchestrator.service.planstore import check_local, store_plan, submit_stored
from orchestrator.service.request import SubmitOptions
from orchestrator.spec.options import MCP, Option, options_of

__all__ = ["PlanInput", "Settings", "check_local", "make_plan", "plan_model", "plan_signature", "require",
           "submit_plan"]


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


def _options(given: BaseModel) -> SubmitOptions:
    """The plan tool's input as submit options (by name; a field not given is left out)."""
    names = {f.name for f in fields(SubmitOptions)}
    return SubmitOptions(**{k: v for k, v in given.model_dump().items() if k in names and v is not None})


def make_plan(settings: Settings, given: BaseModel) -> dict[str, Any]:
    """The plan tool: dry run + doctor + cluster.yaml's checks, stored; its id and everything it decided."""
    stored = store_plan(_options(given), settings.cluster, settings.cwd)
    planned = stored.planned
    plan = planned.plan
    return {"plan_id": stored.plan_id, "submittable": not stored.refusals, "refusals": list(stored.refusals),
            "cluster_file": str(stored.cluster_file), "job_dir": str(plan.job_dir), "resources": plan.resources,
            "inputs": stored.inputs, "task_env": plan.run_config.env, "pass_env": plan.run_config.launcher.pass_env,
            **json.loads(dry_run_json(plan, planned.findings, planned.snapshot))}


def submit_plan(settings: Settings, plan_id: str) -> dict[str, Any]:
    """The submit tool: queue the stored plan, unchanged, once."""
    require(settings.allow_submit, "submit")
    queued = submit_stored(plan_id)
    return {"plan_id": plan_id, "job_id": queued.job_id, "job_dir": str(queued.job_dir),
            "resources": queued.resources, "left_out": list(queued.left_out)}
