"""``orch mcp`` as a real subprocess, driven over stdio by the MCP SDK's own client (``stdio_client`` +
``ClientSession``): the tools it lists, a plan, the refusals (a read-only server's submit, an unknown plan id,
a plan submitted twice, a cancel without --allow-cancel), and a submit to the stub Slurm (tests/stubs: sbatch
queues the job in ``$ORCH_STUB_QUEUE``, squeue/scancel answer from it) followed with status and cancelled.
The SDK is imported only when ``orch mcp`` starts, never on the CLI's start-up path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from support import ORCH, ROOT, STUBS_DIR, TESTS, Stubs

TOOLS = {"plan", "submit", "status", "list", "logs", "cancel", "nodes", "doctor"}


async def _session(params: StdioServerParameters, steps: Callable[[ClientSession], Any]) -> Any:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await steps(session)


def _serve(cwd: Path, env: dict[str, str], *flags: str) -> StdioServerParameters:
    return StdioServerParameters(command=ORCH, args=["mcp", *flags], env=env, cwd=cwd)


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data: dict[str, Any] = result.structured_content
    assert data == json.loads(result.content[0].text)  # the text block says the same as the structured one
    return data


def _refusal(result: Any) -> str:
    assert result.is_error
    text: str = result.content[0].text
    assert text.startswith("orch: error: ") and "\nHINT: " in text, text
    return text


@pytest.fixture
def served(clean_env: pytest.MonkeyPatch, tmp_path: Path, stubs: Stubs,
           write_cluster: Callable[..., Path]) -> tuple[Path, dict[str, str]]:
    write_cluster()
    script = tmp_path / "project" / "ddp_train.py"
    script.parent.mkdir()
    for name in ("ddp_train.py", "ddp_model.py"):
        (script.parent / name).write_text((TESTS / "scripts" / name).read_text())
    env = {**stubs.env(ORCH_STUB_QUEUE=str(tmp_path / "queue.jsonl")),  # ORCH_STATE_DIR: this test's own
           "PATH": f"{STUBS_DIR / 'queue'}{os.pathsep}{os.environ['PATH']}"}  # squeue/scancel: the stub queue
    return script, env


def test_plan_then_refusals_on_a_read_only_server(served: tuple[Path, dict[str, str]], tmp_path: Path,
                                                  stubs: Stubs) -> None:
    script, env = served

    async def steps(session: ClientSession) -> tuple[set[str], dict[str, Any], str, str]:
        listed = {tool.name for tool in (await session.list_tools()).tools}
        plan = _data(await session.call_tool("plan", {"job": str(script), "script_args": ["--out", "out"],
                                                      "nodes": 2, "gpus": 2}))
        read_only = _refusal(await session.call_tool("submit", {"plan_id": plan["plan_id"]}))
        cancel = _refusal(await session.call_tool("cancel", {"jobs": ["4242"]}))
        return listed, plan, read_only, cancel

    listed, plan, read_only, cancel = anyio.run(_session, _serve(tmp_path, env), steps)
    assert listed == TOOLS
    assert plan["submittable"] is True and len(plan["ranks"]) == 4
    assert plan["script"].startswith("#!") and "#SBATCH --nodes=2" in plan["script"]
    assert {r["rank"] for r in plan["ranks"]} == {0, 1, 2, 3}
    assert "the submit tool is off" in read_only and "--allow-submit" in read_only
    assert "the cancel tool is off" in cancel and "--allow-cancel" in cancel
    assert stubs.records("sbatch") == [] and stubs.records("scancel") == []


def test_submit_a_plan_follow_it_and_cancel_it(served: tuple[Path, dict[str, str]], tmp_path: Path,
                                               stubs: Stubs) -> None:
    script, env = served

    async def steps(session: ClientSession) -> dict[str, Any]:
        plan = _data(await session.call_tool("plan", {"job": str(script), "script_args": ["--out", "out"],
                                                      "nodes": 1, "gpus": 2}))
        unknown = _refusal(await session.call_tool("submit", {"plan_id": "0123456789abcdef"}))
        done = _data(await session.call_tool("submit", {"plan_id": plan["plan_id"]}))
        twice = _refusal(await session.call_tool("submit", {"plan_id": plan["plan_id"]}))
        status = _data(await session.call_tool("status", {"jobs": [done["job_id"]]}))
        listed = _data(await session.call_tool("list", {}))
        cancelled = _data(await session.call_tool("cancel", {"jobs": [done["job_id"]]}))
        logs = await session.call_tool("logs", {"job": done["job_id"], "lines": 100000})
        return {"plan": plan, "unknown": unknown, "done": done, "twice": twice, "status": status, "list": listed,
                "cancelled": cancelled, "logs": _refusal(logs)}

    got = anyio.run(_session, _serve(tmp_path, env, "--allow-submit", "--allow-cancel"), steps)
    plan, done = got["plan"], got["done"]
    assert done["job_id"] == "4242" and done["job_dir"] == plan["job_dir"]
    (call,) = stubs.records("sbatch")
    assert call["script"] == plan["script"]  # exactly the planned script
    assert Path(done["job_dir"], "job_id").read_text().strip() == "4242"  # the folder orch submit writes
    assert "unknown plan id 0123456789abcdef" in got["unknown"] and "call the plan tool first" in got["unknown"]
    assert "submitted already as job 4242" in got["twice"]
    (row,) = got["status"]["jobs"]
    assert row["job_id"] == "4242" and row["state"] == "PENDING"
    assert {"failure", "attempts", "goodput", "restarts_shown"} <= set(row)
    assert [r["job_id"] for r in got["list"]["jobs"]] == ["4242"] and "goodput" in got["list"]["jobs"][0]
    assert got["cancelled"]["acted"] == ["4242"] and got["cancelled"]["action"] == "cancel"
    assert "lines 100000 is out of range" in got["logs"]
    assert len(stubs.records("sbatch")) == 1


def test_a_cluster_file_that_is_missing_stops_the_server_before_it_serves(tmp_path: Path,
                                                                          clean_env: pytest.MonkeyPatch) -> None:
    proc = subprocess.run([ORCH, "mcp", "--cluster", str(tmp_path / "nope.yaml")], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120, check=False, cwd=tmp_path)
    assert proc.returncode == 2 and "no cluster file at" in proc.stderr and "HINT:" in proc.stderr
    assert proc.stdout == ""


def test_the_cli_start_up_does_not_import_the_sdk() -> None:
    code = ("import sys\nfrom orchestrator.cli import main\n"
            "try:\n    main(['mcp', '--help'])\nexcept SystemExit:\n    pass\n"
            "assert 'mcp' not in sys.modules and 'orchestrator.commands._mcp_server' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


def test_a_remote_cluster_file_is_refused_with_the_way_to_serve_it(
        clean_env: pytest.MonkeyPatch, write_cluster: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    from orchestrator.cli import main

    path = write_cluster(remote={"host": "login.example.org"})
    assert main(["mcp", "--cluster", str(path)]) == 2
    err = capsys.readouterr().err
    assert "submits over SSH (remote:)" in err and "HINT: run orch mcp on the cluster's login node" in err
