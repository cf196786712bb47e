"""What does orch add to a torchrun-style script? Prints a table (a benchmark, not a test).

The same unmodified script (tests/scripts/ddp_train.py: gloo process group, a few DDP steps,
barrier) started three ways, median wall time of N runs each (2 ranks, CPU):

* ``torchrun --nproc-per-node 2 ddp_train.py``
* ``orch run ddp_train.py --nproc 2`` (job folder, launcher, distenv, runpy)
* ``orch submit ddp_train.py --nodes 2 --gpus 8 --dry-run`` (no ranks run: what planning costs)

    .venv/bin/python bench/bench_script.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORCH = str(Path(sys.executable).parent / "orch")
SCRIPT = ROOT / "tests" / "scripts" / "ddp_train.py"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_"))}
    env.setdefault("PYTHONPATH", str(ROOT))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        out = str(work / "out")
        cases = {
            "torchrun --nproc-per-node 2": lambda: [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
                                                    "2", "--master-port", str(free_port()), str(SCRIPT), "--out", out],
            "orch run --nproc 2": lambda: [ORCH, "run", str(SCRIPT), "--nproc", "2", "--job-root", str(work / "jobs"),
                                           "--", "--out", out],
            "orch submit --dry-run (2x8)": lambda: [ORCH, "submit", str(SCRIPT), "--cluster",
                                                    str(ROOT / "cluster.yaml"), "--nodes", "2", "--gpus", "8",
                                                    "--dry-run", "--", "--out", out],
        }
        for name, argv in cases.items():
            timed(argv(), work, env)  # warm-up
            times = [timed(argv(), work, env) for _ in range(args.runs)]
            rows.append((name, statistics.median(times), min(times)))
    print(f"{'command':<32} {'median s':>9} {'min s':>7}")
    for name, median, fastest in rows:
        print(f"{name:<32} {median:>9.2f} {fastest:>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
