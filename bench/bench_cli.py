"""How fast is ``orch submit --dry-run``? Prints a table (a benchmark, not a test).

Each row is the median wall time of N runs of a fresh interpreter (``subprocess``), after two
warm-up runs (so ``.pyc`` files exist, as on any machine after the first run):

Columns: median wall time, the fastest run, and the median CPU time (user + system) of the child,
which other load on the machine disturbs much less than wall time.

* ``python -c pass``: the interpreter's own start-up, the floor;
* ``python -c "import pydantic.main, jinja2, yaml"``: what the libraries cost before orch does anything;
* ``orch submit mnist --nodes 2 --gpus 8 --dry-run`` (target < 0.15 s; TorchX's
  ``torchx run --dryrun -s slurm dist.ddp -j 2x8`` takes about 0.3 s on the same machine);
* the same with 1024 nodes x 8 GPUs = 8,192 ranks, text and ``--json`` (target < 1 s), on a
  cluster.yaml with a 1024-node partition written to a temporary folder.

``--profile`` adds the slowest imports of the 2x8 dry run (``python -X importtime``).
PYTHONDONTWRITEBYTECODE is removed from the children's environment: without .pyc files every run
would compile orch's modules again, which no user sees.

    .venv/bin/python bench/bench_cli.py [--runs 21] [--profile]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
ORCH = str(Path(sys.executable).parent / "orch")

BIG_CLUSTER = """\
name: bench
partitions:
  - name: big
    nodes: node[0001-1024]
    gpus_per_node: 8
    cpus_per_node: 96
    mem_per_node: 1000G
    max_time: 2-00:00:00
    gpu_type: h100
defaults:
  partition: big
env:
  NCCL_DEBUG: WARN
launcher:
  job_root: {job_root}
"""


def timed(argv: list[str], env: dict[str, str], runs: int) -> tuple[list[float], list[float]]:
    """Wall times and CPU times (user + system of the child) of ``runs`` runs."""
    for _ in range(2):  # warm-up: .pyc files, page cache
        subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, check=True)
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, check=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return walls, cpus


def profile(argv: list[str], env: dict[str, str], top: int = 15) -> str:
    proc = subprocess.run([PYTHON, "-X", "importtime", *argv], env=env, cwd=ROOT, capture_output=True,
                          text=True, check=True)
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        self_us, cumulative_us, name = (part.strip() for part in line[len("import time:"):].split("|"))
        rows.append((int(cumulative_us), int(self_us), name))
    rows.sort(reverse=True)
    lines = [f"{'cumulative':>10}  {'self':>8}  module"]
    lines += [f"{c / 1000:8.1f}ms  {s / 1000:6.1f}ms  {n}" for c, s, n in rows[:top]]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="runs per row (median reported)")
    parser.add_argument("--profile", action="store_true",
                        help="also show the slowest imports of the 2x8 dry run")
    args = parser.parse_args()

    env = {k: v for k, v in os.environ.items()
           if k != "PYTHONDONTWRITEBYTECODE" and not k.startswith("ORCH_")}
    with tempfile.TemporaryDirectory(prefix="orch-bench-") as tmp:
        big = Path(tmp) / "cluster.yaml"
        big.write_text(BIG_CLUSTER.format(job_root=Path(tmp) / "jobs"), encoding="utf-8")
        shipped = str(ROOT / "cluster.yaml")
        dry_2x8 = ["submit", "mnist", "--nodes", "2", "--gpus", "8", "--dry-run", "--cluster", shipped]
        dry_big = ["submit", "mnist", "--nodes", "1024", "--gpus", "8", "--dry-run", "--cluster", str(big)]
        rows = [
            ("python -c pass (interpreter start-up)", [PYTHON, "-c", "pass"], None),
            ("python -c 'import pydantic.main, jinja2, yaml'",
             [PYTHON, "-c", "import pydantic.main, jinja2, yaml"], None),
            ("orch submit mnist --nodes 2 --gpus 8 --dry-run", [ORCH, *dry_2x8], 0.15),
            ("  the same, --json", [ORCH, *dry_2x8, "--json"], 0.15),
            ("orch submit mnist --nodes 1024 --gpus 8 --dry-run", [ORCH, *dry_big], 1.0),
            ("  the same, --json", [ORCH, *dry_big, "--json"], 1.0),
        ]
        print(f"orch CLI speed: {args.runs} fresh interpreters per row, {os.cpu_count()} CPUs, "
              f"python {sys.version.split()[0]}")
        if "PYTHONDONTWRITEBYTECODE" in os.environ:
            print("(PYTHONDONTWRITEBYTECODE is set here; removed for the children so .pyc files are used)")
        width = max(len(label) for label, _, _ in rows)
        print(f"{'command':<{width}}  {'wall':>7}  {'(min)':>7}  {'cpu':>7}  {'target':>7}  result")
        for label, argv, target in rows:
            walls, cpus = timed(argv, env, args.runs)
            wall = statistics.median(walls)
            verdict = "" if target is None else ("ok" if wall < target else "over")
            target_text = "" if target is None else f"{target:.2f}s"
            print(f"{label:<{width}}  {wall:6.3f}s  {min(walls):6.3f}s  {statistics.median(cpus):6.3f}s  "
                  f"{target_text:>7}  {verdict}")
        load = os.getloadavg()[0]
        print(f"wall = median wall time, (min) = fastest run, cpu = median user+system CPU time of the "
              f"child; load average {load:.1f} (other work on the machine inflates wall times)")
        print("TorchX reference (issue 2): 'torchx run --dryrun -s slurm dist.ddp -j 2x8' takes about 0.3 s")
        if args.profile:
            print("\nslowest imports of the 2x8 dry run (python -X importtime, one run):")
            print(profile(["-m", "orchestrator.cli", *dry_2x8], env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
