"""orch mcp's read tools and cancel (commands/_mcp_tools.py): the same data as the verbs' ``--json``, ``logs``
bounded per log (lines, bytes, ranks per call), and cancel refused on a server started without --allow-cancel."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from support import Stubs, run_cli
from test_status_logs import make_job

from orchestrator.commands import _mcp_tools
from orchestrator.commands._mcp_plan import Settings
from orchestrator.errors import OrchError
from orchestrator.records.restarts.attempts import write_attempts

LEDGER = {"allocated_s": 100.0, "train_s": 80.0, "recovery_s": 0.0, "goodput": 0.8}


def _settings(tmp_path: Path, *, cancel: bool = False) -> Settings:
    return Settings(cluster=None, allow_submit=False, allow_cancel=cancel, cwd=tmp_path)


@pytest.fixture
def logged(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A Slurm job folder (id 7) with a 5,000-line rank 0 log, 70 rank logs and a batch log."""
    ranks = {f"7-rank{r}.out": f"rank {r} says hello\n" for r in range(1, 70)}
    lines = "".join(f"line {i:04d} " + "x" * 50 + "\n" for i in range(5000))
    return make_job(tmp_path / "jobs", "big", job_id="7",
                    logs={"slurm-7.out": "orch: job 7 (restart 0) on node1: MASTER_ADDR=node1\n",
                          "7-rank0.out": lines, **ranks})


def test_logs_default_is_the_batch_log_and_rank_0_each_bounded(logged: Path, tmp_path: Path) -> None:
    got = _mcp_tools.logs(_settings(tmp_path), str(logged), lines=10)
    batch, rank0 = got["logs"]
    assert (batch["source"], batch["truncated"]) == ("batch", False)
    assert batch["lines"] == ["orch: job 7 (restart 0) on node1: MASTER_ADDR=node1"]
    assert rank0["source"] == "rank 0" and rank0["truncated"] is True and len(rank0["lines"]) == 10
    assert rank0["lines"][-1].startswith("line 4999 ") and rank0["size"] == 5000 * 61
    assert got["job_id"] == "7" and got["failure"] is None


def test_logs_never_return_more_than_max_bytes_of_a_log(logged: Path, tmp_path: Path) -> None:
    got = _mcp_tools.logs(_settings(tmp_path), str(logged), rank=0, lines=2000, max_bytes=1000)
    (rank0,) = got["logs"]
    assert sum(len(line) + 1 for line in rank0["lines"]) <= 1000 and rank0["truncated"] is True
    assert rank0["lines"] and rank0["lines"][-1].startswith("line 4999 ")


def test_all_ranks_come_per_rank_and_page_by_first_rank(logged: Path, tmp_path: Path) -> None:
    first = _mcp_tools.logs(_settings(tmp_path), str(logged), all_ranks=True, lines=5)
    assert [entry["source"] for entry in first["logs"]] == [f"rank {r}" for r in range(_mcp_tools.MAX_RANKS)]
    assert first["more_ranks_from"] == _mcp_tools.MAX_RANKS
    assert first["logs"][3]["lines"] == ["rank 3 says hello"]
    rest = _mcp_tools.logs(_settings(tmp_path), str(logged), all_ranks=True, first_rank=64)
    assert [entry["source"] for entry in rest["logs"]] == [f"rank {r}" for r in range(64, 70)]
    assert rest["more_ranks_from"] is None


@pytest.mark.parametrize(("values", "words"), [
    ({"lines": 0}, "lines 0 is out of range"),
    ({"lines": _mcp_tools.MAX_LINES + 1}, "lines 2001 is out of range"),
    ({"max_bytes": _mcp_tools.MAX_BYTES + 1}, "max_bytes 1048577 is out of range"),
    ({"rank": 1, "batch": True}, "give one of rank, batch and all_ranks"),
    ({"rank": 99}, "no log for rank 99"),
])
def test_logs_refusals(logged: Path, tmp_path: Path, values: dict[str, int], words: str) -> None:
    with pytest.raises(OrchError, match=words) as refused:
        _mcp_tools.logs(_settings(tmp_path), str(logged), **values)  # type: ignore[arg-type]
    assert refused.value.hint


def test_status_and_list_carry_blame_attempts_and_goodput(clean_env: pytest.MonkeyPatch, tmp_path: Path,
                                                          write_cluster: Callable[..., Path]) -> None:
    write_cluster()  # job_root: tmp_path/jobs
    folder = make_job(tmp_path / "jobs", "done", mode="local", result={"goodput": LEDGER})
    write_attempts(folder, [{"attempt": 0, "requeue": 0, "kind": "completed", "exit_code": 0}])
    status = _mcp_tools.status(_settings(tmp_path), [str(folder)])
    (row,) = status["jobs"]
    assert row["state"] == "COMPLETED" and row["goodput"] == LEDGER and row["failure"] is None
    assert row["attempts"][0]["kind"] == "completed" and row["restarts_shown"] == "0+0"
    listed = _mcp_tools.list_jobs(_settings(tmp_path))
    assert listed["more"] is False and [r["job_dir"] for r in listed["jobs"]] == [str(folder)]
    assert listed["jobs"][0]["goodput"] == LEDGER and listed["jobs"][0]["attempts"] == row["attempts"]


def test_cancel_is_refused_without_allow_cancel(clean_env: pytest.MonkeyPatch, tmp_path: Path, stubs: Stubs) -> None:
    with pytest.raises(OrchError, match="the cancel tool is off") as refused:
        _mcp_tools.cancel(_settings(tmp_path), ["123"])
    assert "orch mcp --allow-cancel" in (refused.value.hint or "")
    assert stubs.records() == []


def test_nodes_and_doctor_say_what_the_verbs_json_says(clean_env: pytest.MonkeyPatch, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli(["nodes", "--json"], capsys)
    assert _mcp_tools.nodes(_settings(tmp_path)) == json.loads(out)
    script = tmp_path / "train.py"
    script.write_text("import torch.distributed as dist\nfrom torch.utils.data import DataLoader\n\n"
                      "dist.init_process_group('gloo')\nloader = DataLoader(range(8), shuffle=True)\n"
                      "for epoch in range(2):\n    for x in loader:\n        pass\n")
    _, out, _ = run_cli(["doctor", str(script), "--json"], capsys)
    found = _mcp_tools.doctor(_settings(tmp_path), [str(script)])
    assert found["findings"] == json.loads(out) and "DDP003" in {f["code"] for f in found["findings"]}
    assert found["possible"] == 0 and {f["confidence"] for f in found["findings"]} == {"certain"}
    unbound = tmp_path / "unbound.py"  # a device nothing binds, as far as can be read: a possible DDP001
    unbound.write_text("import torch\nimport torch.distributed as dist\n\ndist.init_process_group('nccl')\n"
                       "model = torch.nn.Linear(2, 2).cuda()\n")
    found = _mcp_tools.doctor(_settings(tmp_path), [str(unbound)])
    assert found["possible"] == 1 and [(f["code"], f["confidence"]) for f in found["findings"]] == [
        ("DDP001", "possible")]
    with pytest.raises(OrchError, match=r"nope\.py"):
        _mcp_tools.doctor(_settings(tmp_path), [str(tmp_path / "nope.py")])
