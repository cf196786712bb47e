"""Checkpoints off the training thread: the training thread's stall of a background save against the
synchronous save, and steps/s while a background write runs against steps/s without one (prints a table).

A single-rank process group (gloo, CPU), a model of a few large Linear layers trained with Adam (the state is
the weights plus Adam's two moments: ``--width 2048 --layers 4`` is 16.8 M parameters, 201 MB of state), saved
by orch's own ``Checkpointer`` into a folder on disk (``--dir``; its file system decides the write time) with the
state the entrypoint saves (``runtime.state.checkpoint_state``: model, optimizer, RNG states, counters).

Per round (``--repeats`` rounds, the medians reported): a synchronous save, timed on the training thread; training
steps with no save in flight (half a window); a background save, its stall timed (the save returns once the state
is in host memory), then training steps until its write has ended (steps/s during a save); then the other half
window without a save (steps/s without: both halves). The ratios are taken round by round (the load of a shared
machine drifts between rounds). The first background save allocates the host buffers (page faults): it is
reported apart; the rounds reuse them.

    .venv/bin/python bench/bench_checkpoint.py --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from orchestrator.env.devices import CPU
from orchestrator.local.rankenv import free_port
from orchestrator.runtime.checkpoint import Checkpointer
from orchestrator.runtime.dist import Dist, process_group
from orchestrator.runtime.state import checkpoint_state


class Bench:
    def __init__(self, width: int, layers: int, batch: int) -> None:
        torch.manual_seed(0)
        self.model = nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.ReLU()) for _ in range(layers)])
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-4)
        self.inputs = torch.randn(batch, width)
        self.step()  # Adam's moments exist from the first step on

    def step(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        self.model(self.inputs).square().mean().backward()  # type: ignore[no-untyped-call]
        self.optimizer.step()

    def state(self) -> dict[str, Any]:
        return checkpoint_state(model=self.model.state_dict(), optimizer=self.optimizer.state_dict(), scaler=None,
                                epoch=0, step=1, seconds=0.0, world_size=1, batch_size=len(self.inputs), grad_accum=1,
                                params={"lr": 1e-4}, job="bench")

    def state_bytes(self) -> int:
        tensors = [*self.model.state_dict().values(),
                   *(v for s in self.optimizer.state.values() for v in s.values() if isinstance(v, torch.Tensor))]
        return sum(t.numel() * t.element_size() for t in tensors)

    def steps_for(self, seconds: float) -> tuple[int, float]:
        began = time.perf_counter()
        n = 0
        while n < 2 or time.perf_counter() - began < seconds:
            self.step()
            n += 1
        return n, time.perf_counter() - began


def timed(action: Any) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--dir", type=Path, default=None, help="where the checkpoints go (default: a temporary "
                        "folder under the current one, on its file system)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    bench = Bench(args.width, args.layers, args.batch)
    with tempfile.TemporaryDirectory(dir=args.dir or Path.cwd(), prefix=".bench-ckpt-") as folder, \
            process_group(rank=0, world_size=1, local_rank=0, master_addr="127.0.0.1", master_port=free_port(),
                          choice=CPU, timeout=600, collective_timeout=600) as ctx:
        run(bench, ctx, Path(folder), args)


def run(bench: Bench, ctx: Dist, folder: Path, args: argparse.Namespace) -> None:
    sync = Checkpointer(folder / "sync", ctx)
    background = Checkpointer(folder / "async", ctx, background=True)
    first_stall = timed(lambda: background.save(bench.state(), {}))
    background.wait()
    rows: dict[str, list[float]] = {k: [] for k in ("sync", "stall", "write", "during", "without", "ratio", "speed")}
    for _ in range(args.repeats):
        rows["sync"].append(timed(lambda: sync.save(bench.state(), {})))
        window = max(rows["write"][-1] if rows["write"] else 1.0, 1.0)
        n_before, s_before = bench.steps_for(window / 2)
        written = background.write_s
        rows["stall"].append(timed(lambda: background.save(bench.state(), {})))
        steps, seconds = 0, 0.0
        while background.writer.in_flight:  # steps while the write runs (the last one may outlast it)
            n, s = bench.steps_for(0.0)
            steps, seconds = steps + n, seconds + s
        background.wait()
        rows["write"].append(background.write_s - written)
        n_after, s_after = bench.steps_for(window / 2)
        rows["during"].append(steps / seconds)
        rows["without"].append((n_before + n_after) / (s_before + s_after))
        rows["ratio"].append(rows["stall"][-1] / rows["sync"][-1])  # paired, round by round: load drifts
        rows["speed"].append(rows["during"][-1] / rows["without"][-1])
    med = {k: statistics.median(v) for k, v in rows.items()}
    mb = bench.state_bytes() / 1e6
    print(f"state {mb:.0f} MB ({sum(p.numel() for p in bench.model.parameters()) / 1e6:.1f} M parameters + Adam), "
          f"{args.threads} torch thread(s), {args.repeats} rounds, medians; checkpoints in {folder}")
    print("| measure | median | all rounds |")
    print("| --- | --- | --- |")
    table = [("synchronous save (training thread)", "sync", " s"),
             ("background save: training-thread stall", "stall", " s"),
             ("background save: its write (background thread)", "write", " s"),
             ("stall / synchronous save (goal <= 10%)", "ratio", "%"),
             ("steps/s while a background write runs", "during", ""),
             ("steps/s with no save in flight (before and after)", "without", ""),
             ("steps/s during / without (goal >= 95%)", "speed", "%")]
    for label, key, unit in table:
        shown = [f"{v:.1%}" if unit == "%" else f"{v:.3f}{unit}" for v in [med[key], *rows[key]]]
        print(f"| {label} | {shown[0]} | {', '.join(shown[1:])} |")
    print(f"| first background save's stall (host buffers allocated) | {first_stall:.3f} s | |")
    print(f"\nstall / synchronous save: {med['ratio']:.1%} ({'ok' if med['ratio'] <= 0.10 else 'missed'}); "
          f"steps/s during a save / without: {med['speed']:.1%} ({'ok' if med['speed'] >= 0.95 else 'missed'})")


if __name__ == "__main__":
    main()
