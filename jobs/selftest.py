"""selftest: a cluster health check through the same launcher as any job; it trains nothing.

Checks: rendezvous (time, agreement on world size and master), one distinct (host, GPU) per rank,
MASTER_ADDR resolves and answers from every node, all-reduce bus bandwidth (nccl-tests' definition,
2(n-1)/n) from 1 KiB up, the slowest ring pair, a GEMM per rank (the slowest named when an outlier),
and the partition's ``expect`` figures from cluster.yaml. Prints a table, writes ``result.json``, and
exits non-zero when a check fails: ``orch run selftest --nproc 2``, ``orch submit selftest --nodes 2``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pydantic import Field

from orchestrator import JobSpec, Resources, TrainParams

if TYPE_CHECKING:
    from orchestrator import BuildContext, TrainTask


class SelftestParams(TrainParams):
    iters: int = Field(default=5, ge=1, description="timed repetitions per measurement")
    max_bytes: int | None = Field(default=None, ge=1024, description="largest all-reduce (default: 256 MiB on "
                                  "GPU, 16 MiB on CPU)")
    link_bytes: int = Field(default=4 << 20, ge=4, description="bytes per ring-neighbour transfer")
    gemm_size: int | None = Field(default=None, ge=8, description="GEMM n (default: 4096 on GPU, 256 on CPU)")
    outlier_ratio: float = Field(default=0.5, ge=0, le=1, description="a rank below this x the median GEMM "
                                 "rate is an outlier")
    expect_busbw_gbps: float | None = Field(default=None, gt=0, description="overrides the partition's "
                                            "expect.busbw_gbps (GB/s)")
    expect_gemm_gflops: float | None = Field(default=None, gt=0, description="overrides the partition's "
                                             "expect.gemm_gflops")
    force_device_clash: bool = Field(default=False, description="test the check itself: every rank claims "
                                     "device 0 (the devices check must FAIL)")
    fail_on_node: str | None = Field(default=None, description="TEST HOOK: the ranks on the node whose "
                                     "SLURMD_NODENAME is this fail the check test_hook (to test preflight)")
    result_file: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]+\.json$",
                                    description="file name of the verdict in the job folder (default "
                                    "result.json; preflight: preflight.json)")


def build(params: SelftestParams, ctx: BuildContext) -> TrainTask:
    from orchestrator.runtime import selftest

    selftest.finish(selftest.run(params, ctx.device, ctx.job_dir, os.environ))  # never returns


SPEC = JobSpec(
    name="selftest",
    params=SelftestParams,
    build=build,
    resources=Resources(nodes=1, gpus=1, time="00:10:00"),
    description="cluster self-test: rendezvous, devices, MASTER_ADDR, all-reduce bandwidth, GEMM; trains nothing",
)
