"""The cluster self-test, measured in every rank (the built-in job ``selftest`` calls ``run``).

Every rank measures: how long it took to be ready, which (host, device) it holds, whether
MASTER_ADDR resolves and answers from its node, all-reduce times for growing sizes, the bandwidth
to its ring neighbour, and a fixed-size GEMM. Rank 0 gathers the reports, judges them with
``orchestrator.task.selftest`` (pure), prints the table and writes ``result.json``; every rank then ends
with the same exit status (non-zero when a check failed), so the test can gate a long job
(``sbatch --dependency afterok:``). It trains nothing.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import torch
import torch.distributed as dist

from orchestrator.env.devices import VISIBLE_VAR, host_name, parse_visible_devices
from orchestrator.errors import OrchError
from orchestrator.runtime.metrics import write_json_atomic
from orchestrator.spec.runconfig import JOB_FILE, RESULT_FILE
from orchestrator.task.selftest import EXPECT_KEYS, AllreducePoint, Link, RankReport, evaluate, format_report, sizes


class SelftestFailed(OrchError):
    """At least one check failed (exit 1: a dependent job must not start)."""

    exit_code = 1


def run(params: Any, device: torch.device, job_dir: Path, environ: Mapping[str, str]) -> int:
    """Measure, gather, judge; rank 0 reports. Returns 0 when every check passed, else 1 (all ranks)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    on_gpu = device.type == "cuda"
    ready = time.time()
    startup = ready - _process_start(ready)
    dist.barrier()
    host = host_name(environ, socket.gethostname())
    master = f"{environ.get('MASTER_ADDR', '?')}:{environ.get('MASTER_PORT', '?')}"
    own = _physical_device(device, environ)
    report = RankReport(
        rank=rank, host=host, device="0" if params.force_device_clash else own,
        world_size=int(environ.get("WORLD_SIZE", world)), master=master, startup_s=round(startup, 3),
        master_error=_master_error(environ), gemm_gflops=_gemm(device, params),
        foreign_devices=_foreign_devices(own) if on_gpu else (),
        forced_failure=bool(params.fail_on_node) and environ.get("SLURMD_NODENAME") == params.fail_on_node,
    )
    max_bytes = params.max_bytes or (256 << 20 if on_gpu else 16 << 20)
    points = [_allreduce(n, device, params.iters) for n in sizes(max_bytes)]
    links = _ring_links(device, params.link_bytes, params.iters)
    reports: list[Any] = [None] * world
    dist.all_gather_object(reports, report)
    all_links: list[Any] = [None] * world
    dist.all_gather_object(all_links, links)
    outcome = evaluate(reports, points, [link for part in all_links for link in part],
                       expect=_expectations(params, job_dir), on_gpu=on_gpu, outlier_ratio=params.outlier_ratio)
    if rank == 0:
        backend = dist.get_backend()
        nodes = len({r.host for r in reports})
        header = f"orch selftest: {world} rank(s) on {nodes} node(s), {device.type} ({backend})"
        print(format_report(outcome, header), flush=True)
        verdict = outcome.as_dict({"backend": backend, "device": device.type})
        write_json_atomic(job_dir / (params.result_file or RESULT_FILE), verdict)
    dist.barrier()  # the result file exists before any rank leaves
    return 0 if outcome.ok else 1


def finish(code: int) -> NoReturn:
    """End this task with ``code`` (the self-test replaces training). Rank 0's failure goes through the
    launcher's error path (a message naming it, exit 1); every other ending leaves as the launcher
    does after a run: process group destroyed, output flushed, ``os._exit`` (no interpreter teardown,
    which torch's threads can turn into an abort)."""
    if code and dist.is_initialized() and dist.get_rank() == 0:
        raise SelftestFailed("selftest: at least one check failed (see the table above and result.json)",
                             hint="fix the node or the network named there, or rerun to rule out noise")
    if dist.is_initialized():
        dist.destroy_process_group()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


# -- measurements ----------------------------------------------------------------------------------
def _process_start(now: float) -> float:
    """When this process started (Linux /proc), else ``now``."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[19])
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime"))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return now


def _physical_device(device: torch.device, environ: Mapping[str, str]) -> str | None:
    if device.type != "cuda":
        return None
    index = device.index or 0
    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    if uuid is not None:
        return str(uuid)
    ids = parse_visible_devices(environ.get(VISIBLE_VAR))
    return ids[index] if ids and index < len(ids) else str(index)


def _foreign_devices(own: str | None) -> tuple[str, ...]:
    """GPUs other than its own on which this process holds memory (nvidia-smi; none when absent)."""
    if shutil.which("nvidia-smi") is None:
        return ()
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,gpu_uuid", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    mine = str(os.getpid())
    found = []
    for line in out.splitlines():
        pid, _, uuid = (part.strip() for part in line.partition(","))
        if pid == mine and own is not None and uuid not in (own, f"GPU-{own}") and own not in uuid:
            found.append(uuid)
    return tuple(found)


def _master_error(environ: Mapping[str, str]) -> str | None:
    addr, port = environ.get("MASTER_ADDR"), environ.get("MASTER_PORT")
    if not addr or not port:
        return "MASTER_ADDR or MASTER_PORT is not set"
    try:
        socket.getaddrinfo(addr, int(port), type=socket.SOCK_STREAM)
    except (OSError, ValueError) as exc:
        return f"MASTER_ADDR {addr} does not resolve: {exc}"
    try:
        with socket.create_connection((addr, int(port)), timeout=10):
            pass
    except OSError as exc:
        return f"{addr}:{port} does not answer: {exc}"
    return None


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _gemm(device: torch.device, params: Any) -> float:
    n = params.gemm_size or (4096 if device.type == "cuda" else 256)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    a @ b  # warm-up
    _sync(device)
    began = time.perf_counter()
    for _ in range(params.iters):
        a @ b
    _sync(device)
    seconds = time.perf_counter() - began
    return 2 * n**3 * params.iters / seconds / 1e9 if seconds > 0 else 0.0


def _allreduce(nbytes: int, device: torch.device, iters: int) -> AllreducePoint:
    tensor = torch.ones(max(1, nbytes // 4), dtype=torch.float32, device=device)
    for _ in range(2):
        dist.all_reduce(tensor)
    _sync(device)
    dist.barrier()
    began = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(tensor)
    _sync(device)
    elapsed = torch.tensor([(time.perf_counter() - began) / iters], dtype=torch.float64, device=device)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    return AllreducePoint(bytes=tensor.numel() * 4, seconds=float(elapsed.item()), ranks=dist.get_world_size())


def _ring_links(device: torch.device, nbytes: int, iters: int) -> list[Link]:
    """This rank's receive bandwidth from its ring predecessor (every rank sends to rank + 1 at once)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    if world < 2:
        return []
    send = torch.ones(max(1, nbytes // 4), dtype=torch.float32, device=device)
    recv = torch.empty_like(send)
    dst, src = (rank + 1) % world, (rank - 1) % world

    def exchange() -> None:
        ops = [dist.P2POp(dist.isend, send, dst), dist.P2POp(dist.irecv, recv, src)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()

    exchange()
    _sync(device)
    dist.barrier()
    began = time.perf_counter()
    for _ in range(iters):
        exchange()
    _sync(device)
    seconds = (time.perf_counter() - began) / iters
    return [Link(src=src, dst=rank, gbps=round(send.numel() * 4 / seconds / 1e9, 4) if seconds > 0 else 0.0)]


def _expectations(params: Any, job_dir: Path) -> dict[str, float]:
    """The partition's ``expect`` figures (job.json), overridden by the job's own parameters."""
    expect: dict[str, float] = {}
    try:
        data = json.loads((job_dir / JOB_FILE).read_text(encoding="utf-8"))
        expect.update({k: float(v) for k, v in (data.get("expect") or {}).items() if k in EXPECT_KEYS})
    except (OSError, ValueError):
        pass
    for key in EXPECT_KEYS:
        value = getattr(params, f"expect_{key}", None)
        if value is not None:
            expect[key] = float(value)
    return expect
