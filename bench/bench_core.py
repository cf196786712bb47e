"""Speed of the pure core: hostlist expansion/compression and rank derivation for a dry run.

Run: .venv/bin/python bench/bench_core.py [--repeat N]
Prints a table (median and best of N runs, caches cleared before every run). Targets from the
product brief: 10,000 hosts expanded "in milliseconds"; 8192 ranks (1024 nodes x 8 GPUs)
simulated and derived well under 1 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestrator.env import distenv, hostlist, taskenv


def _clear_caches() -> None:
    hostlist.expand_cached.cache_clear()
    distenv._layout.cache_clear()
    distenv._parse_tasks_per_node.cache_clear()


def _time(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    runs = []
    for _ in range(repeat):
        _clear_caches()
        start = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - start) * 1000)
    return statistics.median(runs), min(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    repeat = parser.parse_args().repeat

    ranged = "node[00001-10000]"
    listed = ",".join(f"gpu{i:05d}" for i in range(10000))
    multi = "rack[01-100]-node[001-100]"
    hosts = hostlist.expand(ranged)
    shuffled = hosts[::2] + hosts[1::2]
    nodes = [f"gpu{i:04d}" for i in range(1, 1025)]

    def simulate_and_derive() -> None:
        envs = taskenv.simulate_slurm_task_envs(nodes, 8, "123456", 8, nodes[0], 29500)
        ranks = [distenv.derive(env) for env in envs]
        assert len(ranks) == 8192 and ranks[-1].rank == 8191

    rows = [
        ("expand node[00001-10000] (10,000 hosts)", lambda: hostlist.expand(ranged)),
        ("expand 10,000 comma-separated names", lambda: hostlist.expand(listed)),
        ("expand rack[01-100]-node[001-100] (10,000)", lambda: hostlist.expand(multi)),
        ("compress 10,000 sorted hosts", lambda: hostlist.compress(hosts)),
        ("compress 10,000 hosts, odd then even", lambda: hostlist.compress(shuffled)),
        ("simulate + derive 8192 ranks (1024x8)", simulate_and_derive),
    ]
    print(f"{'operation':<46} {'median ms':>10} {'best ms':>9}")
    print("-" * 67)
    for name, fn in rows:
        median, best = _time(fn, repeat)
        print(f"{name:<46} {median:>10.2f} {best:>9.2f}")
    _clear_caches()
    hostlist.expand(ranged)
    start = time.perf_counter()
    for _ in range(8192):
        hostlist.expand_cached(ranged)
    per_lookup_us = (time.perf_counter() - start) * 1e6 / 8192
    print(f"{'cached expand lookup (per call, us)':<46} {per_lookup_us:>10.3f}")


if __name__ == "__main__":
    main()
