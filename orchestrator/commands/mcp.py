"""``orch mcp [--allow-submit] [--allow-cancel] [--cluster C]``: an MCP server over stdio for coding agents.

Its tools mirror the CLI (``plan``, ``submit``, ``status``, ``list``, ``logs``, ``cancel``, ``nodes``,
``doctor``; docs/agents.md); a submit is a plan made by ``plan``, checked again and queued as planned.
Read-only unless started with ``--allow-submit`` / ``--allow-cancel``. The MCP SDK (the ``mcp`` extra) is
imported here, when the server starts: never on the CLI's start-up path.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from orchestrator.commands._common import add_cluster_argument, scope
from orchestrator.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-submit", action="store_true",
                        help="let the agent submit plans (the submit tool); without it the server is read-only there")
    parser.add_argument("--allow-cancel", action="store_true",
                        help="let the agent cancel or signal jobs (the cancel tool)")
    add_cluster_argument(parser)


def run(args: argparse.Namespace) -> int:
    try:
        from orchestrator.commands._mcp_server import serve
    except ImportError as exc:
        if not (exc.name or "").startswith("mcp"):
            raise
        raise ConfigError(f"orch mcp needs the MCP Python SDK, which is not installed here ({exc.name})",
                          hint="pip install 'orch[mcp]' (the official SDK, package mcp)") from None
    from orchestrator.commands._mcp_plan import Settings, check_local
    from orchestrator.service.jobs import cluster_or_none

    check_local(cluster_or_none(scope(args)), args.cluster or "in use")  # a named file missing or invalid: refused here
    if sys.stdin.isatty():  # started by hand: say what it is waiting for (stderr: stdout is the protocol's)
        print("orch mcp: serving MCP over stdio, for an MCP client that starts this command (docs/agents.md); "
              "Ctrl-D ends it", file=sys.stderr)
    serve(Settings(cluster=args.cluster, allow_submit=args.allow_submit, allow_cancel=args.allow_cancel,
                   cwd=Path.cwd()))
    return 0
