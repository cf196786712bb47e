"""The cluster self-test's verdicts (pure: no torch): what each rank measured -> checks, table, result.json.

``orchestrator/runtime/selftest.py`` measures (rendezvous, devices, MASTER_ADDR, all-reduce, GEMM) and
gathers one ``RankReport`` per rank; everything here decides from those numbers alone.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from orchestrator.env.devices import find_shared_devices, shared_devices_message
from orchestrator.spec.runconfig import PREFLIGHT_RESULT_FILE

# What a partition may promise in cluster.yaml (partitions[].expect), and the check each one gates.
EXPECT_KEYS: dict[str, str] = {"busbw_gbps": "allreduce", "gemm_gflops": "gemm"}


@dataclass(frozen=True)
class RankReport:
    rank: int
    host: str
    device: str | None  # the physical device the rank uses (GPU id/uuid); None on CPU
    world_size: int  # as this rank was told (WORLD_SIZE)
    master: str  # MASTER_ADDR:MASTER_PORT as this rank was told
    startup_s: float  # process start -> process group ready
    master_error: str | None  # why MASTER_ADDR did not resolve or answer from this rank, or None
    gemm_gflops: float
    foreign_devices: tuple[str, ...] = ()  # GPUs (not its own) this rank's process holds memory on
    forced_failure: bool = False  # the test hook fail_on_node matched this rank's node (SLURMD_NODENAME)


@dataclass(frozen=True)
class AllreducePoint:
    bytes: int
    seconds: float  # per all-reduce, the slowest rank's average
    ranks: int

    @property
    def algbw_gbps(self) -> float:
        return self.bytes / self.seconds / 1e9 if self.seconds > 0 else 0.0

    @property
    def busbw_gbps(self) -> float:
        """nccl-tests' bus bandwidth: algbw x 2(n-1)/n, comparable across world sizes."""
        return self.algbw_gbps * bus_factor(self.ranks)

    def as_dict(self) -> dict[str, Any]:
        return {"bytes": self.bytes, "algbw_gbps": round(self.algbw_gbps, 4),
                "busbw_gbps": round(self.busbw_gbps, 4), "seconds": self.seconds}


@dataclass(frozen=True)
class Link:
    src: int
    dst: int
    gbps: float


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class Outcome:
    checks: list[Check]
    reports: list[RankReport]
    allreduce: list[AllreducePoint]
    links: list[Link] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def as_dict(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "job": "selftest", "status": "passed" if self.ok else "failed", "world_size": len(self.reports),
            "checks": [asdict(c) for c in self.checks],
            "allreduce": [p.as_dict() for p in self.allreduce],
            "gemm": [{"rank": r.rank, "host": r.host, "gflops": round(r.gemm_gflops, 2)} for r in self.reports],
            "links": [asdict(link) for link in self.links],
            "ranks": [asdict(r) for r in self.reports],
            "failed_nodes": failed_nodes(self),
        }
        data.update(extra or {})
        return data


def failed_nodes(outcome: Outcome) -> list[dict[str, str]]:
    """``[{"host", "check"}]``: the nodes a failed check blames (preflight excludes them); a check that
    fails without blaming a node (rendezvous, bandwidth below expectations) names none."""
    blamed: dict[tuple[str, str], None] = {}
    failed = {c.name for c in outcome.checks if not c.ok}
    for r in outcome.reports:
        if "master_addr" in failed and r.master_error:
            blamed[(r.host, "master_addr")] = None
        if "devices" in failed and r.foreign_devices:
            blamed[(r.host, "devices")] = None
        if "test_hook" in failed and r.forced_failure:
            blamed[(r.host, "test_hook")] = None
    if "devices" in failed:
        for host, _device in find_shared_devices([(r.host, r.device) for r in outcome.reports]):
            blamed[(host, "devices")] = None
    if "gemm" in failed and outcome.reports:
        blamed[(min(outcome.reports, key=lambda r: r.gemm_gflops).host, "gemm")] = None
    return [{"host": host, "check": check} for host, check in blamed]


def bus_factor(ranks: int) -> float:
    return 2 * (ranks - 1) / ranks if ranks > 0 else 0.0


def human_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def sizes(max_bytes: int, min_bytes: int = 1024, step: int = 4) -> list[int]:
    """1 KiB, 4 KiB, ... up to ``max_bytes`` (included when a power of the step away)."""
    out, n = [], min_bytes
    while n <= max_bytes:
        out.append(n)
        n *= step
    return out


def evaluate(reports: Sequence[RankReport], allreduce: Sequence[AllreducePoint], links: Sequence[Link], *,
             expect: Mapping[str, float], on_gpu: bool, outlier_ratio: float) -> Outcome:
    reports = sorted(reports, key=lambda r: r.rank)
    checks = [_rendezvous(reports), _devices(reports, on_gpu), _master(reports),
              _allreduce(allreduce, links, expect.get("busbw_gbps"), len(reports)),
              _gemm(reports, expect.get("gemm_gflops"), on_gpu, outlier_ratio)]
    forced = [r for r in reports if r.forced_failure]
    if forced:  # the test hook (selftest fail_on_node=NODE, preflight: ORCH_PREFLIGHT_FAIL_NODE)
        checks.append(Check("test_hook", False, "; ".join(
            f"rank {r.rank} on {r.host}: failed on purpose (test hook fail_on_node)" for r in forced)))
    return Outcome(checks=checks, reports=list(reports), allreduce=list(allreduce), links=list(links))


def _rendezvous(reports: Sequence[RankReport]) -> Check:
    n = len(reports)
    sizes_told = {r.world_size for r in reports}
    masters = {r.master for r in reports}
    slow = max(reports, key=lambda r: r.startup_s)
    problems = []
    if sizes_told != {n}:
        problems.append(f"ranks were told world sizes {sorted(sizes_told)}, {n} joined")
    if len(masters) != 1:
        problems.append("ranks disagree on the master: " + ", ".join(sorted(masters)))
    ranks_seen = sorted(r.rank for r in reports)
    if ranks_seen != list(range(n)):
        problems.append(f"ranks {ranks_seen} are not 0..{n - 1}")
    timing = (f"slowest start-up (process start to process group ready) {slow.startup_s:.1f} s, "
              f"rank {slow.rank} on {slow.host}")
    if problems:
        return Check("rendezvous", False, "; ".join(problems) + f"; {timing}")
    return Check("rendezvous", True, f"{n} ranks agree on world size {n} and master {masters.pop()}; {timing}")


def _devices(reports: Sequence[RankReport], on_gpu: bool) -> Check:
    shared = find_shared_devices([(r.host, r.device) for r in reports])
    if shared:
        return Check("devices", False, shared_devices_message(shared))
    foreign = [f"rank {r.rank} holds memory on GPU {', '.join(r.foreign_devices)}" for r in reports
               if r.foreign_devices]
    if foreign:
        return Check("devices", False, "; ".join(foreign))
    hosts = len({r.host for r in reports})
    if not on_gpu or all(r.device is None for r in reports):
        return Check("devices", True, f"CPU ranks on {hosts} host(s): no GPU to share")
    return Check("devices", True, f"{len(reports)} distinct (host, GPU) pairs on {hosts} host(s)")


def _master(reports: Sequence[RankReport]) -> Check:
    bad = [r for r in reports if r.master_error]
    if bad:
        return Check("master_addr", False, "; ".join(f"rank {r.rank} on {r.host}: {r.master_error}" for r in bad))
    return Check("master_addr", True, f"{reports[0].master} resolves and answers from every rank")


def _allreduce(points: Sequence[AllreducePoint], links: Sequence[Link], expected: float | None,
               ranks: int) -> Check:
    if not points:
        return Check("allreduce", True, "no sizes measured")
    if ranks < 2:
        return Check("allreduce", True, "one rank: nothing crosses a link (bus bandwidth is 0 by definition); "
                                         "expectations not checked")
    best = max(points, key=lambda p: p.busbw_gbps)
    detail = f"peak bus bandwidth {best.busbw_gbps:.3f} GB/s at {human_bytes(best.bytes)}"
    if links:
        slowest = min(links, key=lambda link: link.gbps)
        detail += f"; slowest pair rank {slowest.src} -> {slowest.dst} at {slowest.gbps:.3f} GB/s"
    if expected is not None and ranks > 1:
        if best.busbw_gbps < expected:
            return Check("allreduce", False, f"{detail}, below the partition's expected {expected:g} GB/s")
        detail += f" (expected >= {expected:g})"
    return Check("allreduce", True, detail)


def _gemm(reports: Sequence[RankReport], expected: float | None, on_gpu: bool, outlier_ratio: float) -> Check:
    median = statistics.median(r.gemm_gflops for r in reports)
    slow = min(reports, key=lambda r: r.gemm_gflops)
    detail = f"median {median:.1f} GFLOP/s; slowest rank {slow.rank} on {slow.host} at {slow.gemm_gflops:.1f}"
    if expected is not None and slow.gemm_gflops < expected:
        return Check("gemm", False, f"{detail}, below the partition's expected {expected:g} GFLOP/s")
    if len(reports) > 1 and median > 0 and slow.gemm_gflops < outlier_ratio * median:
        note = f"{detail}: an outlier (< {outlier_ratio:g} x median)"
        # CPU ranks share the host's cores: their timings say nothing about a node, so only report.
        return Check("gemm", not on_gpu, note)
    return Check("gemm", True, detail)


def format_report(outcome: Outcome, header: str) -> str:
    lines = [header, ""]
    width = max(len(c.name) for c in outcome.checks)
    for c in outcome.checks:
        lines.append(f"  {c.name:<{width}}  {'PASS' if c.ok else 'FAIL'}  {c.detail}")
    if outcome.allreduce:
        lines += ["", f"  {'size':>10}  {'algbw GB/s':>10}  {'busbw GB/s':>10}"]
        for p in outcome.allreduce:
            lines.append(f"  {human_bytes(p.bytes):>10}  {p.algbw_gbps:>10.3f}  {p.busbw_gbps:>10.3f}")
    failed = [c.name for c in outcome.checks if not c.ok]
    lines += ["", "selftest: PASSED" if not failed else f"selftest: FAILED ({', '.join(failed)})"]
    return "\n".join(lines)


# The test hook: exported to every task (orch submit --env ORCH_PREFLIGHT_FAIL_NODE=node2), it makes
# the preflight's check "test_hook" fail on that node only (matched against SLURMD_NODENAME).
FAIL_NODE_ENV_VAR = "ORCH_PREFLIGHT_FAIL_NODE"


def selftest_params(environ: Mapping[str, str]) -> dict[str, Any]:
    """The selftest's parameters in a preflight: quick (few repetitions, small sizes), its own verdict file."""
    params: dict[str, Any] = {"iters": 2, "max_bytes": 1 << 20, "result_file": PREFLIGHT_RESULT_FILE}
    if environ.get(FAIL_NODE_ENV_VAR):
        params["fail_on_node"] = environ[FAIL_NODE_ENV_VAR]
    return params
