"""Training throughput of the shared entrypoint on MNIST, against references, as a table of ratios.

    .venv/bin/python bench/bench_train.py [--data-dir DIR] [--steps 200] [--repeats 2]

Every measurement trains LeNet-5 (jobs/mnist.py) with batch 64 per rank, 1 thread per rank, for
the same number of steps, timed from the first step to the last (process start-up and data loading
excluded), and reports samples per second over all ranks (best of ``--repeats``):

- entrypoint 2 ranks / 1 rank: ``orch run mnist`` (metrics.jsonl's samples/s of the epoch);
- naive 2 ranks: the classic MNIST DDP script: torchvision's MNIST with ToTensor + Normalize per
  sample through a DataLoader with a DistributedSampler;
- plain 2 ranks: DDP with the entrypoint's data path (tensors decoded once, batches gathered from
  the sampler's indices), but no metrics, stop votes or checkpoints;
- compute limit 2 ranks (and 1 rank): independent processes running forward + backward + step on
  a ready batch tensor (no data path, no communication);
- DataLoader rows: the same MNIST as a per-sample ``Dataset`` (bench/jobs/mnist_dataset.py), through
  ``orch run`` with ``num_workers=2`` (the entrypoint's DataLoader path: DistributedSampler, workers,
  a seed per batch), against a plain DDP loop over a DataLoader with the same Dataset, sampler and
  2 workers.

The context lines show the machine's own limits: how the compute limit itself scales from 1 to 2
ranks, and what DDP's gradient all-reduce costs a plain loop (no orch code at all).

``--logging``: only the cost of the per-step scalars (steps.jsonl + TensorBoard): the same
``orch run mnist`` with ``log_every=1`` (a point every step: the worst case; the default gives about
200 points per run) against ``log_every`` larger than the run (no point at all), interleaved, best of ``--repeats``.

Targets: entrypoint >= 1.5x naive; >= 90% of the compute limit; 2 ranks >= 1.8x 1 rank;
overhead over the plain loop <= 5%; DataLoader path within 5% of the plain DataLoader loop; per-step
logging < 2%.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BATCH = 64
WORKERS = 2  # DataLoader workers per rank in the DataLoader rows
MNIST_GZ = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
            "t10k-labels-idx1-ubyte.gz")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# --- workers (one process per rank) ------------------------------------------------------------

def worker(kind: str, data_dir: Path, steps: int, out: Path) -> None:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, DistributedSampler

    from jobs.mnist import make_model

    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.manual_seed(0)
    model: torch.nn.Module = make_model()
    if kind != "compute":
        dist.init_process_group("gloo", rank=rank, world_size=world)
        model = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step(inputs: torch.Tensor, targets: torch.Tensor) -> None:
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(inputs), targets).backward()  # type: ignore[no-untyped-call]
        optimizer.step()

    done = 0
    if kind == "compute":
        inputs, targets = torch.randn(BATCH, 1, 28, 28), torch.randint(0, 10, (BATCH,))
        begin = time.perf_counter()
        for _ in range(steps):
            step(inputs, targets)
            done += BATCH
    elif kind == "naive":
        from torchvision import datasets, transforms

        transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
        dataset = datasets.MNIST(str(data_dir), train=True, download=True, transform=transform)
        sampler: DistributedSampler[Any] = DistributedSampler(dataset, shuffle=True, seed=0)
        loader = DataLoader(dataset, batch_size=BATCH, sampler=sampler)
        begin = time.perf_counter()
        for i, (inputs, targets) in enumerate(loader):
            if i == steps:
                break
            step(inputs, targets)
            done += int(targets.shape[0])
    elif kind == "loader":  # a plain DDP loop over a DataLoader on the per-sample Dataset
        sys.path.insert(0, str(ROOT / "bench" / "jobs"))
        from mnist_dataset import dataset

        per_sample = dataset(data_dir)
        sampler3: DistributedSampler[Any] = DistributedSampler(per_sample, shuffle=True, seed=0)
        loader = DataLoader(per_sample, batch_size=BATCH, sampler=sampler3, num_workers=WORKERS,
                            persistent_workers=True)
        begin = time.perf_counter()
        for i, (inputs, targets) in enumerate(loader):
            if i == steps:
                break
            step(inputs, targets)
            done += int(targets.shape[0])
    else:  # plain: the entrypoint's data path without its bookkeeping
        from jobs._datasets import load_mnist
        from orchestrator.runtime.data import gather

        train, _ = load_mnist(data_dir)
        sampler2: DistributedSampler[Any] = DistributedSampler(train, shuffle=True, seed=0)
        order = torch.tensor(list(sampler2), dtype=torch.long)
        begin = time.perf_counter()
        for i in range(steps):
            inputs, targets = gather(train, order[i * BATCH:(i + 1) * BATCH])
            step(inputs, targets)
            done += BATCH
    seconds = time.perf_counter() - begin
    if kind != "compute":
        dist.destroy_process_group()
    out.write_text(json.dumps({"rank": rank, "samples": done, "seconds": seconds}))


def run_workers(kind: str, world: int, data_dir: Path, steps: int, tmp: Path) -> float:
    port = free_port()
    procs, outs = [], []
    for rank in range(world):
        out = tmp / f"{kind}-{rank}.json"
        out.unlink(missing_ok=True)
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1",
               "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
        argv = [sys.executable, __file__, "--worker", kind, "--data-dir", str(data_dir),
                "--steps", str(steps), "--out", str(out)]
        procs.append(subprocess.Popen(argv, env=env))
        outs.append(out)
    for proc in procs:
        if proc.wait(timeout=900) != 0:
            raise SystemExit(f"{kind} worker failed with exit code {proc.returncode}")
    results = [json.loads(o.read_text()) for o in outs]
    return float(sum(r["samples"] for r in results) / max(r["seconds"] for r in results))


def run_entrypoint(world: int, data_dir: Path, steps: int, tmp: Path, job: str = "mnist",
                   *extra: str) -> float:
    argv = [sys.executable, "-m", "orchestrator.cli", "run", job, "--nproc", str(world), "--data-dir",
            str(data_dir), "--job-root", str(tmp / "jobs"), "--json", "epochs=1",
            f"max_steps_per_epoch={steps}", f"batch_size={BATCH}", "num_threads=1", "checkpoint=false", *extra]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCH_CLUSTER")}
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env, cwd=tmp)
    if proc.returncode != 0:
        raise SystemExit(f"orch run failed:\n{proc.stderr[-3000:]}")
    return float(json.loads(proc.stdout)["final"]["samples_per_s"])


def point_cost(points: int = 2000) -> tuple[float, float]:
    """(ms per LeNet-5 training step, ms per logged point) in this process, 1 thread: one point is the
    tracker's whole work at a step (loss read, gradient norm, steps.jsonl line, TensorBoard scalars)."""
    import torch
    from torch import nn

    sys.path.insert(0, str(ROOT))
    from jobs.mnist import make_model
    from orchestrator.runtime.tracking import open_tracker

    torch.set_num_threads(1)
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, targets = torch.randn(BATCH, 1, 28, 28), torch.randint(0, 10, (BATCH,))

    def step() -> None:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(inputs), targets).backward()
        optimizer.step()

    for _ in range(20):
        step()
    begin = time.perf_counter()
    for _ in range(200):
        step()
    step_ms = (time.perf_counter() - begin) / 200 * 1e3
    with tempfile.TemporaryDirectory() as tmp:
        tracker = open_tracker(Path(tmp), is_main=True, tracking=[], params={}, log_every=1,
                               total_opt_steps=points, samples_per_step=BATCH, resumed_at=None, job_name="bench")
        loss_sum = torch.zeros((), dtype=torch.float64)

        def total() -> float:
            return float(loss_sum)

        tracker.begin(0, 0.0, 0)
        begin = time.perf_counter()
        for index in range(1, points + 1):
            loss_sum += 0.5
            tracker.point(index, loss_sum=total, count=index * BATCH, lr=0.01, model=model)
        point_ms = (time.perf_counter() - begin) / points * 1e3
        tracker.close("completed")
    return step_ms, point_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir",
                        default=os.environ.get("ORCH_DATA_DIR") or str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--steps", type=int, default=200, help="training steps per measurement")
    parser.add_argument("--repeats", type=int, default=2, help="measurements per row (best counts)")
    parser.add_argument("--logging", action="store_true", help="only the per-step logging overhead")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, Path(args.data_dir), args.steps, Path(args.out))
        return
    source = Path(args.data_dir) / "MNIST" / "raw"
    if not all((source / name).is_file() for name in MNIST_GZ):
        raise SystemExit(f"MNIST not found in {source}: pass --data-dir or set ORCH_DATA_DIR")
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="orch-bench-") as tmp_name:
        tmp = Path(tmp_name)
        naive_root = tmp / "naive"  # torchvision extracts next to the .gz files: a writable copy
        (naive_root / "MNIST" / "raw").mkdir(parents=True)
        for name in MNIST_GZ:
            shutil.copy(source / name, naive_root / "MNIST" / "raw" / name)
        data = Path(args.data_dir)
        rows: dict[str, float] = {}
        measures: dict[str, Callable[[], float]] = {
            "entrypoint, 2 ranks": lambda: run_entrypoint(2, data, args.steps, tmp),
            "entrypoint, 1 rank": lambda: run_entrypoint(1, data, args.steps, tmp),
            "naive DataLoader, 2 ranks": lambda: run_workers("naive", 2, naive_root, args.steps, tmp),
            "plain loop, same data path, 2 ranks": lambda: run_workers("plain", 2, data, args.steps, tmp),
            "compute limit, 2 ranks": lambda: run_workers("compute", 2, data, args.steps, tmp),
            "compute limit, 1 rank": lambda: run_workers("compute", 1, data, args.steps, tmp),
            "entrypoint, Dataset + 2 workers, 2 ranks": lambda: run_entrypoint(
                2, data, args.steps, tmp, str(ROOT / "bench" / "jobs" / "mnist_dataset.py"), f"num_workers={WORKERS}"),
            "plain loop, same DataLoader, 2 ranks": lambda: run_workers("loader", 2, data, args.steps, tmp),
        }
        if args.logging:
            measures = {
                "entrypoint, 2 ranks, a point every step": lambda: run_entrypoint(
                    2, data, args.steps, tmp, "mnist", "log_every=1"),
                "entrypoint, 2 ranks, no per-step point": lambda: run_entrypoint(
                    2, data, args.steps, tmp, "mnist", f"log_every={args.steps * 10}"),
            }
        for repeat in range(args.repeats):
            for name, measure in measures.items():
                rate = measure()
                rows[name] = max(rows.get(name, 0.0), rate)
                print(f"  [{repeat + 1}/{args.repeats}] {name}: {rate:,.0f} samples/s", file=sys.stderr,
                      flush=True)
    print(f"\nMNIST LeNet-5, batch {BATCH}/rank, 1 thread/rank, {args.steps} steps, best of {args.repeats} "
          f"({os.cpu_count()} CPUs; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after: "
          "other processes distort every number)\n")
    print(f"{'measurement':<44}{'samples/s':>12}")
    for name, rate in rows.items():
        print(f"{name:<44}{rate:>12,.0f}")
    if args.logging:
        step_ms, point_ms = point_cost()
        print(f"\none LeNet-5 step {step_ms:.2f} ms, one logged point {point_ms:.3f} ms: "
              f"{point_ms / step_ms * 100:.2f}% of a step at log_every=1 (in-process, no other rank)")
        cost = 1 - rows["entrypoint, 2 ranks, a point every step"] / rows["entrypoint, 2 ranks, no per-step point"]
        print(f"\nper-step logging overhead: {cost * 100:.2f}% (target < 2%): {'ok' if cost < 0.02 else 'MISSED'}")
        return
    entry2, entry1 = rows["entrypoint, 2 ranks"], rows["entrypoint, 1 rank"]
    ratios = [
        ("entrypoint / naive (2 ranks)", entry2 / rows["naive DataLoader, 2 ranks"], ">= 1.50x", 1.5),
        ("entrypoint / compute limit (2 ranks)", entry2 / rows["compute limit, 2 ranks"], ">= 0.90x", 0.9),
        ("entrypoint 2 ranks / 1 rank", entry2 / entry1, ">= 1.80x", 1.8),
        ("entrypoint / plain loop (2 ranks)", entry2 / rows["plain loop, same data path, 2 ranks"],
         ">= 0.95x", 0.95),
        ("DataLoader: entrypoint / plain loop", rows["entrypoint, Dataset + 2 workers, 2 ranks"]
         / rows["plain loop, same DataLoader, 2 ranks"], ">= 0.95x", 0.95),
    ]
    print(f"\n{'ratio':<40}{'measured':>10}{'target':>10}  verdict")
    for name, value, target, limit in ratios:
        print(f"{name:<40}{value:>9.2f}x{target:>10}  {'ok' if value >= limit else 'MISSED'}")
    compute2, compute1 = rows["compute limit, 2 ranks"], rows["compute limit, 1 rank"]
    print("\ncontext (no target): what the machine allows")
    print(f"{'compute limit 2 ranks / 1 rank':<40}{compute2 / compute1:>9.2f}x  (the hardware's own scaling)")
    print(f"{'plain DDP loop / compute limit':<40}{rows['plain loop, same data path, 2 ranks'] / compute2:>9.2f}x"
          "  (DDP's gradient all-reduce + data path, without orch)")


if __name__ == "__main__":
    main()
