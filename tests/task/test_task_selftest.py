"""The cluster self-test: verdicts from reports (pure), cluster.yaml ``expect``, and real 2-rank gloo runs
through ``orch run selftest`` (one healthy, one with a forced device clash and an impossible
bandwidth expectation, which must FAIL with a non-zero exit)."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, TEST_CLUSTER, clean_environ

from orchestrator.errors import ConfigError
from orchestrator.slurm.plan import build_plan, make_request
from orchestrator.spec.cluster import Cluster
from orchestrator.spec.job import load_job
from orchestrator.task.selftest import AllreducePoint, Link, RankReport, bus_factor, evaluate, format_report, sizes

RUN_TIMEOUT = 240
CHECKS = ["rendezvous", "devices", "master_addr", "allreduce", "gemm"]


def report(rank: int, **changes: Any) -> RankReport:
    values: dict[str, Any] = {"rank": rank, "host": f"n{rank // 2}", "device": str(rank % 2), "world_size": 4,
                              "master": "n0:29500", "startup_s": 1.0, "master_error": None, "gemm_gflops": 100.0}
    values.update(changes)
    return RankReport(**values)


def healthy(**changes: Any) -> list[RankReport]:
    return [report(r, **(changes if r == 3 else {})) for r in range(4)]


POINTS = [AllreducePoint(bytes=1 << 20, seconds=0.001, ranks=4)]


def verdicts(reports: list[RankReport], expect: dict[str, float] | None = None, on_gpu: bool = True,
             links: list[Link] | None = None) -> dict[str, tuple[bool, str]]:
    outcome = evaluate(reports, POINTS, links or [], expect=expect or {}, on_gpu=on_gpu, outlier_ratio=0.5)
    return {c.name: (c.ok, c.detail) for c in outcome.checks}


def test_bus_bandwidth_is_nccl_tests_definition() -> None:
    assert bus_factor(2) == 1.0 and bus_factor(4) == 1.5 and bus_factor(8) == 1.75
    point = AllreducePoint(bytes=8 * 10**9, seconds=2.0, ranks=8)
    assert point.algbw_gbps == 4.0 and point.busbw_gbps == 7.0
    assert sizes(256 << 20) == [1024 << (2 * i) for i in range(10)]


def test_healthy_cluster_passes_everything() -> None:
    result = verdicts(healthy())
    assert list(result) == CHECKS and all(ok for ok, _ in result.values())


@pytest.mark.parametrize(("changes", "check", "fragment"), [
    ({"device": "0"}, "devices", "ranks 2, 3 all use GPU 0 on n1"),
    ({"foreign_devices": ("GPU-abc",)}, "devices", "rank 3 holds memory on GPU GPU-abc"),
    ({"world_size": 8}, "rendezvous", "world sizes [4, 8]"),
    ({"master": "other:1"}, "rendezvous", "disagree on the master"),
    ({"master_error": "MASTER_ADDR n0 does not resolve"}, "master_addr", "rank 3 on n1: MASTER_ADDR n0"),
    ({"gemm_gflops": 10.0}, "gemm", "slowest rank 3 on n1 at 10.0: an outlier"),
])
def test_each_failure_is_named(changes: dict[str, Any], check: str, fragment: str) -> None:
    result = verdicts(healthy(**changes))
    ok, detail = result[check]
    assert not ok and fragment in detail
    assert all(ok for name, (ok, _) in result.items() if name != check)


def test_one_rank_has_no_bus_traffic_and_skips_expectations() -> None:
    one = [report(0, world_size=1)]
    outcome = evaluate(one, [AllreducePoint(bytes=1024, seconds=0.001, ranks=1)], [], expect={"busbw_gbps": 10},
                       on_gpu=False, outlier_ratio=0.5)
    assert outcome.ok and "one rank" in {c.name: c.detail for c in outcome.checks}["allreduce"]


def test_cpu_gemm_outlier_is_reported_not_failed() -> None:
    ok, detail = verdicts(healthy(gemm_gflops=10.0, device=None), on_gpu=False)["gemm"]
    assert ok and "slowest rank 3" in detail


def test_partition_expectations_fail_below_them() -> None:
    busbw = POINTS[0].busbw_gbps
    links = [Link(src=0, dst=1, gbps=9.0), Link(src=2, dst=3, gbps=0.5)]
    ok, detail = verdicts(healthy(), {"busbw_gbps": busbw * 2}, links=links)["allreduce"]
    assert not ok and "below the partition's expected" in detail and "slowest pair rank 2 -> 3" in detail
    assert verdicts(healthy(), {"busbw_gbps": busbw / 2})["allreduce"][0]
    assert not verdicts(healthy(), {"gemm_gflops": 200})["gemm"][0]


def test_report_table() -> None:
    outcome = evaluate(healthy(device="0"), POINTS, [], expect={}, on_gpu=True, outlier_ratio=0.5)
    text = format_report(outcome, "header")
    assert "devices      FAIL" in text and "rendezvous   PASS" in text and "1 MiB" in text
    assert text.endswith("selftest: FAILED (devices)")
    data = outcome.as_dict()
    assert data["status"] == "failed" and [c["name"] for c in data["checks"]] == CHECKS
    assert set(data["allreduce"][0]) >= {"bytes", "algbw_gbps", "busbw_gbps"}


def test_cluster_yaml_expect_reaches_job_json() -> None:
    data = json.loads(json.dumps(TEST_CLUSTER))
    data["partitions"][0]["expect"] = {"busbw_gbps": 180}
    cluster = Cluster.model_validate(data)
    loaded = load_job("selftest", {}, Path.cwd())
    plan = build_plan(make_request({"job": "selftest", "nodes": 2, "gpus": 8}), cluster, loaded, python="python3",
                      now=datetime(2026, 1, 1), token="abc123", job_root=Path("/tmp/jobs"))
    assert plan.run_config.expect == {"busbw_gbps": 180.0}
    data["partitions"][0]["expect"] = {"busbw": 180}
    with pytest.raises(Exception, match="busbw"):
        Cluster.model_validate(data)
    with pytest.raises(ConfigError):
        build_plan(make_request({"job": "selftest", "overrides": {"expect_busbw_gbps": "-1"}}),
                   Cluster.model_validate(TEST_CLUSTER), loaded, python="python3", now=datetime(2026, 1, 1),
                   token="abc123", job_root=Path("/tmp/jobs"))


# -- real runs: 2 gloo ranks through orch run ------------------------------------------------------
def orch_run(tmp_path: Path, *params: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = subprocess.run([ORCH, "run", "selftest", "--nproc", "2", "--job-root", str(tmp_path), "--json",
                           "max_bytes=65536", "link_bytes=65536", "gemm_size=64", *params],
                          capture_output=True, text=True, timeout=RUN_TIMEOUT, env=clean_environ(), check=False)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    result = json.loads((Path(summary["job_dir"]) / "result.json").read_text())
    return proc, result


@pytest.mark.slow
def test_selftest_two_gloo_ranks_pass(tmp_path: Path) -> None:
    proc, result = orch_run(tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert result["status"] == "passed" and result["world_size"] == 2 and result["backend"] == "gloo"
    assert [(c["name"], c["ok"]) for c in result["checks"]] == [(name, True) for name in CHECKS]
    assert [p["bytes"] for p in result["allreduce"]] == [1024, 4096, 16384, 65536]
    assert all(p["busbw_gbps"] > 0 and p["busbw_gbps"] == p["algbw_gbps"] for p in result["allreduce"])  # 2 ranks
    assert sorted(r["rank"] for r in result["ranks"]) == [0, 1] and len(result["gemm"]) == 2
    assert {(link["src"], link["dst"]) for link in result["links"]} == {(0, 1), (1, 0)}


@pytest.mark.slow
def test_selftest_forced_device_clash_fails_with_nonzero_exit(tmp_path: Path) -> None:
    proc, result = orch_run(tmp_path, "force_device_clash=true", "expect_busbw_gbps=1000000")
    assert proc.returncode == 1
    failed = {c["name"]: c["detail"] for c in result["checks"] if not c["ok"]}
    assert set(failed) == {"devices", "allreduce"}
    assert "ranks 0, 1 all use GPU 0" in failed["devices"]
    assert "below the partition's expected 1e+06 GB/s" in failed["allreduce"]
    assert result["status"] == "failed"
    log = (Path(json.loads(proc.stdout)["job_dir"]) / "logs" / "local-rank0.out").read_text()
    assert "devices      FAIL" in log and "selftest: FAILED (devices, allreduce)" in log
