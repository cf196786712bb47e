"""What does rank 0's agent pay to watch the other agents' beats? A benchmark, not a test.

In-process restarts (``orchestrator/restarts/heartbeat.py``): every rank's agent adds 1 to its own key in the agents'
store every 0.5 s, and rank 0's agent, which hosts that store, reads every other rank's count as often to name an
agent stopped for good. This times one such look (``Agents.stale``) through the agents' ``BoundedStore`` on a real
TCPStore, while a separate process beats every rank's key at the agents' rate (N adds per 0.5 s), for growing N:

* ``per-key look``: one store call per rank (the first look, which makes the keys of ranks not beaten yet, and how
  every look was read before ``multi_get``);
* ``look``: every later look, one ``multi_get`` of every count;
* ``beats/s``: the adds the beating process achieved (the agents' load on the store: N / 0.5 s asked).

A look must stay well under the 0.5 s between looks (rank 0's agent also watches its own worker in that loop).

    .venv/bin/python bench/bench_agent_heartbeat.py [--ranks 16,128,1024,4096] [--looks 9]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BEATER = """
import sys, time
from datetime import timedelta
import torch.distributed as dist
from orchestrator.restarts.heartbeat import alive
port, ranks, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=30))
done, start = 0, time.monotonic()
while time.monotonic() - start < seconds:
    period = time.monotonic()
    for rank in range(1, ranks):
        store.add(alive(rank), 1)
        done += 1
    time.sleep(max(0.0, 0.5 - (time.monotonic() - period)))
print(done / (time.monotonic() - start))
"""


def measure(ranks: int, looks: int) -> tuple[float, float, float]:
    """(per-key look s, multi_get look s: medians, beats/s achieved) for ``ranks`` ranks."""
    import torch.distributed as dist

    from orchestrator.local.rankenv import free_port
    from orchestrator.restarts.heartbeat import Agents
    from orchestrator.restarts.store import BoundedStore

    port = free_port()
    host = dist.TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=30))
    seconds = 2.0 + looks * 0.6 + ranks / 500  # long enough for every look below
    beater = subprocess.Popen([sys.executable, "-c", BEATER, str(port), str(ranks), str(seconds)],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
    store = BoundedStore(host)
    time.sleep(1.0)  # the beater's first round
    per_key, batched = [], []
    for _ in range(looks):
        fresh = Agents(0, ranks)  # a first look: one call per rank
        started = time.perf_counter()
        fresh.stale(store, time.monotonic())
        per_key.append(time.perf_counter() - started)
        started = time.perf_counter()
        fresh.stale(store, time.monotonic())  # every later look: one multi_get
        batched.append(time.perf_counter() - started)
        time.sleep(0.1)
    out, _ = beater.communicate(timeout=seconds + 60)
    return statistics.median(per_key), statistics.median(batched), float(out.strip() or 0)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", default="16,128,1024,4096")
    parser.add_argument("--looks", type=int, default=9)
    args = parser.parse_args(argv)
    print("| ranks | per-key look | look (multi_get) | beats/s asked | beats/s achieved |")
    print("| --- | --- | --- | --- | --- |")
    for ranks in (int(n) for n in args.ranks.split(",")):
        per_key, batched, rate = measure(ranks, args.looks)
        print(f"| {ranks} | {per_key * 1000:.1f} ms | {batched * 1000:.1f} ms | {(ranks - 1) / 0.5:.0f} | {rate:.0f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
