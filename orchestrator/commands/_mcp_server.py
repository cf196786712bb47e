"""``orch mcp``'s server: the tools of ``_mcp_plan.py`` and ``_mcp_tools.py`` on the MCP SDK's ``MCPServer``,
over stdio. The only module that imports the SDK (``orch mcp`` imports it when it starts, never the CLI).

Every refusal orch gives people (an ``OrchError``: message and HINT) reaches the agent as a tool error
with the same two lines; a file-system error no tool expected becomes orch's one clear error for it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from orchestrator import __version__
from orchestrator.commands import _mcp_plan, _mcp_tools
from orchestrator.commands._mcp_plan import PlanInput, Settings, plan_signature
from orchestrator.errors import OrchError
from orchestrator.spec.numbers import os_error

T = TypeVar("T")

INSTRUCTIONS = """\
orch runs PyTorch training jobs on Slurm. To queue a job: call plan (it returns the exact batch script,
every rank, orch doctor's findings, what would stop the submit, and a plan_id), read it, then call submit
with that plan_id. A plan is submitted once, and only while its code and cluster file are unchanged
(else plan again). Follow a job with status (state, progress, the blamed rank of a failure, attempts,
goodput) and logs (bounded, per rank). submit and cancel work only when the server was started with
--allow-submit / --allow-cancel; every refusal says why and what to do (its HINT line)."""

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def refusal(error: OrchError) -> CallToolResult:
    """A tool error whose text is what orch prints for people: ``orch: error: ...`` and ``HINT: ...``."""
    return CallToolResult(content=[TextContent(type="text", text=error.render())], is_error=True)


def _refusals(fn: Callable[..., T]) -> Callable[..., T | CallToolResult]:
    """orch's errors as tool errors the agent reads (a file-system error no tool expected: orch's one error
    for it)."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> T | CallToolResult:
        try:
            return fn(*args, **kwargs)
        except OrchError as exc:
            return refusal(exc)
        except OSError as exc:
            return refusal(os_error(exc))

    return call


def build(settings: Settings) -> MCPServer[Any]:
    """The server with its tools (``settings``: what ``orch mcp`` was started with)."""
    server: MCPServer[Any] = MCPServer(name="orch", version=__version__, instructions=INSTRUCTIONS,
                                       log_level="WARNING")

    def plan(**given: Any) -> dict[str, Any]:
        return _mcp_plan.make_plan(settings, PlanInput(**{k: v for k, v in given.items() if v is not None}))

    plan.__signature__ = plan_signature()  # type: ignore[attr-defined]  # the table's options (spec/options.py)
    server.tool(description="Plan a job (orch submit --dry-run + orch doctor + cluster.yaml's checks): the exact "
                            "batch script, every rank, the findings, 'refusals' (what would stop the submit) and a "
                            "plan_id for submit. job: a job name, a job file or a script (train.py, its own "
                            "arguments in script_args); overrides: key=value for a job file.",
                annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
                name="plan")(_refusals(plan))

    @server.tool(description="Submit a plan made by plan, exactly as planned, once (needs --allow-submit). Refused: "
                             "an unknown plan_id, a plan submitted before, a plan whose code or cluster file changed.",
                 annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False))
    @_refusals
    def submit(plan_id: str) -> dict[str, Any]:
        return _mcp_plan.submit_plan(settings, plan_id)

    @server.tool(description="orch status --json of job ids or folders (none: the newest jobs): Slurm state, "
                             "epoch/step/loss, 'failure' (the blamed rank and node), 'attempts', 'goodput' (the "
                             "ledger of where the time went, once finished).", annotations=READ_ONLY)
    @_refusals
    def status(jobs: list[str] | None = None, limit: int = 20) -> dict[str, Any]:
        return _mcp_tools.status(settings, jobs or [], limit)

    @server.tool(description="orch list --json: the newest jobs submitted from here, with blame, attempts and "
                             "goodput.", annotations=READ_ONLY, name="list")
    @_refusals
    def list_jobs(limit: int = 20) -> dict[str, Any]:
        return _mcp_tools.list_jobs(settings, limit)

    @server.tool(description="The end of a job's logs, per log: default the batch log and rank 0's; rank=R one "
                             "rank; batch=true the batch log; all_ranks=true every rank (64 per call, from "
                             "first_rank). At most 'lines' lines (<= 2000) and 'max_bytes' bytes (<= 1 MiB) of "
                             "each log.", annotations=READ_ONLY)
    @_refusals
    def logs(job: str, rank: int | None = None, batch: bool = False, all_ranks: bool = False, first_rank: int = 0,
             lines: int = 200, max_bytes: int = 65536) -> dict[str, Any]:
        return _mcp_tools.logs(settings, job, rank=rank, batch=batch, all_ranks=all_ranks, first_rank=first_rank,
                               lines=lines, max_bytes=max_bytes)

    @server.tool(description="Cancel jobs (scancel), or send them a signal (e.g. USR1) instead (needs "
                             "--allow-cancel).",
                 annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False))
    @_refusals
    def cancel(jobs: list[str], signal: str | None = None) -> dict[str, Any]:
        return _mcp_tools.cancel(settings, jobs, signal)

    @server.tool(description="orch nodes --json: the nodes recorded as bad that a submit leaves out.",
                 annotations=READ_ONLY)
    @_refusals
    def nodes() -> dict[str, Any]:
        return _mcp_tools.nodes(settings)

    @server.tool(description="orch doctor --json: the DDP pitfalls (DDP001...) of training scripts, found without "
                             "running them; each with its evidence and confidence (certain, likely, possible: "
                             "orch doctor shows possible ones only with --all).", annotations=READ_ONLY)
    @_refusals
    def doctor(files: list[str], ignore: list[str] | None = None) -> dict[str, Any]:
        return _mcp_tools.doctor(settings, files, ignore)

    return server


def serve(settings: Settings) -> None:
    """Serve over stdio until the client closes it (the SDK keeps stray prints off the protocol's stdout)."""
    build(settings).run("stdio")
