"""``orch mcp`` on the local Slurm cluster, driven over stdio by the MCP SDK's own client: it lists the tools,
plans a short smoke job, submits that plan, follows it to COMPLETED with the status tool and reads its goodput
ledger; an unknown plan id, a stale plan (its script edited after planning) and a submit on a server started
without --allow-submit are refused with orch's HINT."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from support import ORCH

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

TOOLS = {"plan", "submit", "status", "list", "logs", "cancel", "nodes", "doctor"}
SMOKE = {"job": "smoke", "nodes": 2, "gpus": 1, "overrides": ["epochs=1", "samples=256", "test_samples=64"]}
SCRIPT = "import torch.distributed as dist\n\ndist.init_process_group('gloo')\ndist.destroy_process_group()\n"
DONE_WITHIN = 120.0  # seconds: the smoke job takes a few


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data: dict[str, Any] = result.structured_content
    return data


def _refusal(result: Any) -> str:
    assert result.is_error, result.structured_content
    text: str = result.content[0].text
    assert text.startswith("orch: error: ") and "\nHINT: " in text, text
    return text


def _server(cluster: SlurmCluster, cwd: Path, *flags: str) -> StdioServerParameters:
    return StdioServerParameters(command=ORCH, args=["mcp", "--cluster", str(cluster.cluster_yaml), *flags],
                                 env=dict(cluster.env), cwd=cwd)


async def _drive(params: StdioServerParameters, project: Path) -> dict[str, Any]:
    got: dict[str, Any] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        got["tools"] = {tool.name for tool in (await session.list_tools()).tools}
        plan = _data(await session.call_tool("plan", SMOKE))
        stale = _data(await session.call_tool("plan", {"job": str(project / "hello.py"), "nodes": 1, "gpus": 1}))
        got["plan"], got["stale_plan"] = plan, stale
        got["unknown"] = _refusal(await session.call_tool("submit", {"plan_id": "0123456789abcdef"}))
        (project / "hello.py").write_text(SCRIPT + "print('edited')\n")  # the code changed since the plan
        got["stale"] = _refusal(await session.call_tool("submit", {"plan_id": stale["plan_id"]}))
        done = _data(await session.call_tool("submit", {"plan_id": plan["plan_id"]}))
        got["submitted"] = done
        deadline = time.monotonic() + DONE_WITHIN
        row: dict[str, Any] = {}
        while time.monotonic() < deadline:
            (row,) = _data(await session.call_tool("status", {"jobs": [done["job_id"]]}))["jobs"]
            if row.get("terminal"):
                break
            await anyio.sleep(1.0)
        got["status"] = row
        got["logs"] = _data(await session.call_tool("logs", {"job": done["job_id"], "rank": 0, "lines": 50}))
    return got


async def _read_only(params: StdioServerParameters) -> str:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        plan = _data(await session.call_tool("plan", SMOKE))
        return _refusal(await session.call_tool("submit", {"plan_id": plan["plan_id"]}))


def test_an_agent_plans_submits_and_follows_a_job(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "hello.py").write_text(SCRIPT)
    got = anyio.run(_drive, _server(slurm_cluster, project, "--allow-submit"), project)
    assert got["tools"] == TOOLS
    plan, done, row = got["plan"], got["submitted"], got["status"]
    assert plan["submittable"] is True and len(plan["ranks"]) == 2, plan
    assert "call the plan tool first" in got["unknown"]
    assert f"plan {got['stale_plan']['plan_id']} is stale" in got["stale"] and str(project) in got["stale"]
    assert done["job_dir"] == plan["job_dir"]
    job_dir = Path(done["job_dir"])
    assert (job_dir / "sbatch.sh").read_text() == plan["script"]  # the planned script, as queued
    assert row.get("state") == "COMPLETED", f"{row}\n{slurm_cluster.describe(job_dir)}"
    goodput = row["goodput"]
    assert isinstance(goodput, dict) and 0 < goodput["goodput"] <= 1, row
    assert row["failure"] is None and row["attempts"], row
    (rank0,) = got["logs"]["logs"]
    assert rank0["source"] == "rank 0" and rank0["lines"], got["logs"]
    refused = anyio.run(_read_only, _server(slurm_cluster, project))
    assert "the submit tool is off" in refused and "--allow-submit" in refused
