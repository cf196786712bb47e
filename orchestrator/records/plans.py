"""The plans ``orch mcp`` hands out: one private file per plan in the user's state folder, the one owner of
where they are and of their life (planned, then submitted at most once).

``<state folder>/plans/<plan id>.json`` (the state folder is :func:`orchestrator.records.jobindex.state_dir`'s;
``plans/`` is 0700, each file 0600, created exclusively, never through a link) holds what ``plan`` decided:
the submit options, the submit directory, the cluster file, the time and token the job folder's name was
made from, the exact batch script and ``job.json``, and a hash of each input (the code, the cluster file).
``<plan id>.submitted`` is the claim of the one submit a plan gets: created with ``O_EXCL`` before sbatch
runs, so two submits of one plan (two agents, two servers) cannot both pass; it then holds the job id.
A plan id is 16 lowercase hex digits (64 random bits): anything else is refused before a path is built.
Plans older than :data:`KEEP_S` (and their claims) are removed when a new plan is saved.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.errors import ConfigError
from orchestrator.records.atomic import write_private
from orchestrator.records.jobindex import state_dir
from orchestrator.spec.safefile import read_text

PLANS_DIR = "plans"
PLAN_SUFFIX = ".json"
CLAIM_SUFFIX = ".submitted"
PLAN_LIMIT = 64 * 1024 * 1024  # a plan holds one script and one job.json: far below this
KEEP_S = 30 * 86400  # a plan older than 30 days is gone (plan again)
_ID_RE = re.compile(r"[0-9a-f]{16}")
_PLAN_HINT = "call the plan tool first and submit the plan_id it returns"


class StoredPlan(BaseModel):
    """One plan as stored (``inputs``: name -> sha256 of that input when it was planned)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = 1
    plan_id: str
    created: str
    cwd: str
    cluster_file: str
    options: dict[str, Any] = Field(description="orchestrator.service.request.SubmitOptions' fields")
    now: str = Field(description="the planned job folder's time (ISO 8601, UTC)")
    token: str = Field(description="the planned job folder's random suffix")
    script: str
    run_config: dict[str, Any]
    inputs: dict[str, str]
    snapshot: bool = Field(description="whether the submit takes a code snapshot")
    digest: str | None = Field(default=None, description="the digest of that snapshot, as planned")


def plans_dir(environ: Mapping[str, str] | None = None) -> Path:
    return state_dir(environ) / PLANS_DIR


def new_id() -> str:
    return secrets.token_hex(8)


def _checked(plan_id: str) -> str:
    if not isinstance(plan_id, str) or not _ID_RE.fullmatch(plan_id):
        raise ConfigError(f"{plan_id!r} is not a plan id (16 hex digits, as the plan tool returns)", hint=_PLAN_HINT)
    return plan_id


def _folder(environ: Mapping[str, str] | None) -> Path:
    folder = plans_dir(environ)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if folder.is_symlink() or (folder.stat().st_mode & 0o077) or folder.stat().st_uid != os.geteuid():
        raise ConfigError(f"{folder} is not a private folder of yours (a link, or others may read or write it)",
                          hint=f"remove it, or chmod 700 {folder}; orch makes it again")
    return folder


def save(plan: StoredPlan, environ: Mapping[str, str] | None = None) -> Path:
    """Write the plan's file (0600, a new file: an id is never reused); remove the plans past :data:`KEEP_S`."""
    folder = _folder(environ)
    prune(folder, time.time() - KEEP_S)
    return write_private(folder / (_checked(plan.plan_id) + PLAN_SUFFIX), plan.model_dump_json(indent=1) + "\n",
                         mode=0o600, exclusive=True)


def prune(folder: Path, before: float) -> None:
    """Remove the plans (and claims) of ``folder`` last written before ``before`` (best effort)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        stem, _, suffix = entry.name.partition(".")
        if not _ID_RE.fullmatch(stem) or f".{suffix}" not in (PLAN_SUFFIX, CLAIM_SUFFIX):
            continue
        with contextlib.suppress(OSError):
            if entry.stat(follow_symlinks=False).st_mtime < before:
                os.unlink(entry.path)


def load(plan_id: str, environ: Mapping[str, str] | None = None) -> StoredPlan:
    """The stored plan; ConfigError naming the id when there is none (or it is damaged)."""
    path = plans_dir(environ) / (_checked(plan_id) + PLAN_SUFFIX)
    if not path.is_file():
        raise ConfigError(f"unknown plan id {plan_id}: no such plan in {path.parent}", hint=_PLAN_HINT)
    text = read_text(path, PLAN_LIMIT)
    try:
        return StoredPlan.model_validate_json(text or "")
    except ValidationError:
        raise ConfigError(f"the plan {plan_id} ({path}) is damaged", hint="plan the job again") from None


def submitted_as(plan_id: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The job id the plan was submitted as ("" while its submit runs or when it failed); None: never."""
    path = plans_dir(environ) / (_checked(plan_id) + CLAIM_SUFFIX)
    if not path.is_file():
        return None
    text = read_text(path, 4096) or ""
    try:
        data = json.loads(text)
    except ValueError:
        return ""
    return str(data.get("job_id") or "") if isinstance(data, dict) else ""


def claim(plan_id: str, environ: Mapping[str, str] | None = None) -> None:
    """Take the plan's one submit; ConfigError when it was taken before (by this or any other server)."""
    path = _folder(environ) / (_checked(plan_id) + CLAIM_SUFFIX)
    try:
        write_private(path, json.dumps({"job_id": None}) + "\n", mode=0o600, exclusive=True)
    except FileExistsError:
        raise already_submitted(plan_id, submitted_as(plan_id, environ)) from None


def record_job(plan_id: str, job_id: str, job_dir: str, environ: Mapping[str, str] | None = None) -> None:
    path = plans_dir(environ) / (_checked(plan_id) + CLAIM_SUFFIX)
    write_private(path, json.dumps({"job_id": job_id, "job_dir": job_dir}) + "\n", mode=0o600)


def release(plan_id: str, environ: Mapping[str, str] | None = None) -> None:
    """Give the claim back (the submit stopped before anything was written)."""
    (plans_dir(environ) / (_checked(plan_id) + CLAIM_SUFFIX)).unlink(missing_ok=True)


def already_submitted(plan_id: str, job_id: str | None) -> ConfigError:
    what = f"as job {job_id}" if job_id else "(its submit did not finish: the job folder says what happened)"
    return ConfigError(f"plan {plan_id} was submitted already {what}; a plan is submitted once",
                       hint="follow that job with the status tool, or call plan again for another run")
