"""Speed of orch doctor: the whole corpus, and generated scripts of growing size (long assignment
chains through a rank, nested rank conditions, many functions), so a slowdown in name resolution shows.

Run: .venv/bin/python bench/bench_doctor.py [--repeat N]
Prints a table (median and best of N runs, lines per second). Target: a 2,000-line training script
in under a second, so `orch submit SCRIPT` does not wait on the check (linear in the size).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from orchestrator.doctor import check_source  # noqa: E402


def generated(functions: int) -> str:
    """A script with ``functions`` train functions, each a chain of assignments from the rank, rank
    conditions, collectives, prints in loops and saves (about 20 lines per function)."""
    parts = ["import os", "import torch", "import torch.distributed as dist",
             "from torch.nn.parallel import DistributedDataParallel as DDP", ""]
    for i in range(functions):
        parts += [
            f"def train_{i}(model, loader, epochs):",
            "    rank = dist.get_rank()",
            "    a = b = c = rank",
            "    for _ in range(3):",
            "        a, b = a + b + c, b + c + a",
            "        c = a * b + c",
            "    is_main = rank == 0",
            "    model = DDP(model.cuda(int(os.environ['LOCAL_RANK'])))",
            "    for epoch in range(epochs):",
            "        for x, y in loader:",
            "            loss = model(x).sum()",
            "            loss.backward()",
            "            if is_main and a + b + c > 0:",
            "                print(loss.item())",
            "        if is_main:",
            "            torch.save(model.module.state_dict(), f'ckpt{epoch}.pt')",
            "        dist.barrier()",
            f"    return train_{max(i - 1, 0)}",
            "",
        ]
    return "\n".join(parts) + "\n"


def _time(source: str, repeat: int) -> tuple[float, float]:
    runs = []
    for _ in range(repeat):
        began = time.perf_counter()
        check_source(source, "bench.py")
        runs.append(time.perf_counter() - began)
    return statistics.median(runs), min(runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    corpus = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "tests/doctor/fixtures").glob("*.py"))]
    cases = [("corpus (all fixtures)", "\n\n".join(corpus), len(corpus))]
    for functions in (10, 100, 400):
        cases.append((f"generated, {functions} functions", generated(functions), 1))
    print(f"{'input':<28} {'lines':>7} {'median ms':>10} {'best ms':>9} {'lines/s':>10}")
    for name, source, files in cases:
        if files > 1:  # the corpus: one check per file, as the CLI does
            texts = corpus
            runs = []
            for _ in range(args.repeat):
                began = time.perf_counter()
                for text in texts:
                    check_source(text, "bench.py")
                runs.append(time.perf_counter() - began)
            median, best = statistics.median(runs), min(runs)
        else:
            median, best = _time(source, args.repeat)
        lines = source.count("\n")
        print(f"{name:<28} {lines:>7} {median * 1000:>10.1f} {best * 1000:>9.1f} {lines / median:>10.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
