"""GPU check: the selftest's NCCL all-reduce, through the real CLI (``orch run selftest --nproc N``, one rank
per visible GPU)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from gpu_support import BACKEND, CUDA, DEVICE_TYPE, explain, job_dir, nproc, requires_cuda, run_orch

from orchestrator.task.selftest import human_bytes

pytestmark = [pytest.mark.gpu, requires_cuda]

CHECKS = ["rendezvous", "devices", "master_addr", "allreduce", "gemm"]


def flops(gflops: float) -> str:
    return f"{gflops / 1000:.1f} TFLOP/s" if gflops >= 1000 else f"{gflops:.1f} GFLOP/s"


def test_selftest_nccl_allreduce(tmp_path: Path, gpu_figure: Callable[[str], None]) -> None:
    """Proves: ``orch run selftest`` on the GPUs initialises NCCL, all-reduces 1 KiB..256 MiB on every rank's
    own GPU and passes every check (exit 0, result.json ``passed``, backend nccl, one distinct GPU per rank,
    no rank holding memory on another GPU). Figure: the peak bus bandwidth (nccl-tests' definition) with 2 GPUs
    or more; with one GPU nothing crosses a link (bus bandwidth 0 by definition), so the figure is the largest
    all-reduce's algorithm bandwidth and the bf16 GEMM rate."""
    n = nproc()
    sizes = [] if CUDA else ["max_bytes=65536", "link_bytes=65536", "gemm_size=64"]  # dry run: small
    proc = run_orch(tmp_path, "selftest", "--nproc", str(n), "--job-root", str(tmp_path / "jobs"), "--json", *sizes)
    assert proc.returncode == 0, explain(proc, tmp_path / "jobs")
    result = json.loads((job_dir(tmp_path / "jobs") / "result.json").read_text(encoding="utf-8"))
    assert (result["status"], result["backend"], result["device"], result["world_size"]) == (
        "passed", BACKEND, DEVICE_TYPE, n), result
    assert [(c["name"], c["ok"]) for c in result["checks"]] == [(name, True) for name in CHECKS], result["checks"]
    points = result["allreduce"]
    assert points[0]["bytes"] == 1024 and points[-1]["bytes"] == (256 << 20 if CUDA else 65536)
    assert all(p["seconds"] > 0 for p in points)
    ranks = result["ranks"]
    assert sorted(r["rank"] for r in ranks) == list(range(n))
    assert all(r["foreign_devices"] == [] for r in ranks), ranks
    if CUDA:
        devices = [r["device"] for r in ranks]
        assert None not in devices and len(set(devices)) == n, devices
        detail = {c["name"]: c["detail"] for c in result["checks"]}["devices"]
        assert f"{n} distinct (host, GPU) pairs" in detail, detail
    gemm = min(g["gflops"] for g in result["gemm"])
    if n >= 2:
        best = max(points, key=lambda p: p["busbw_gbps"])
        assert best["busbw_gbps"] > 0
        gpu_figure(f"{BACKEND} all-reduce ok, {n} ranks: peak bus bandwidth {best['busbw_gbps']:.2f} GB/s at "
                   f"{human_bytes(best['bytes'])}; GEMM {flops(gemm)} (slowest rank)")
    else:
        largest = points[-1]
        gpu_figure(f"{BACKEND} all-reduce ok, 1 rank (no link: bus bandwidth 0 by definition): "
                   f"{largest['algbw_gbps']:.1f} GB/s algbw at {human_bytes(largest['bytes'])}; "
                   f"GEMM {flops(gemm)}")
