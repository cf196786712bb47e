"""What one refresh of ``orch top`` costs with 1,000 job folders. Prints a table (a benchmark, not a test).

The job root is filled with orch's own writers (``create_job_dir``/``write_config``, ``job_id``, the
runtime's ``Progress``, ``MetricsLog`` and ``StepsLog``, the ranks' outcome ``Recorder``, ``attempts.json``,
``result.json``): by default 980 completed jobs, 10 failed ones (a blamed rank) and 10 running ones.
orch top's model (:class:`orchestrator.service.board.Board`, what the app calls every ``--interval``) is
timed in this process, without the terminal UI; Slurm is an in-process stand-in answering squeue and
sacct (the real clients add one process start per query: at most one batched query every
``--slurm-interval`` seconds). The clock is simulated: each refresh is ``--interval`` (0.5 s) later than
the one before, so the Slurm queries (every 5 s) and the listing of the root again (every 10 s) fall
into the steady-state rounds as they would live.

Rows: the first refresh (every folder read), steady-state refreshes with nothing changed, and with one
running job's folder changing before each refresh (its progress.json rewritten and a steps.jsonl line
appended, as rank 0 does). Columns: CPU time per refresh (process time: user + system, median and mean
over the rounds), the files opened per refresh (``os.open`` calls: orch's readers open through it) and
the share of one core at the given interval.

    .venv/bin/python bench/bench_top.py [--folders 1000] [--running 10] [--rounds 100] [--interval 0.5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from orchestrator.records.atomic import write_private, write_text_atomic  # noqa: E402
from orchestrator.records.jobcreate import create_job_dir, write_config  # noqa: E402
from orchestrator.records.joblayout import outcome_path  # noqa: E402
from orchestrator.records.restarts.attempts import write_attempts  # noqa: E402
from orchestrator.runtime.metrics import EpochMetrics, MetricsLog  # noqa: E402
from orchestrator.runtime.progress import Progress  # noqa: E402
from orchestrator.runtime.tracking import StepsLog  # noqa: E402
from orchestrator.service.board import Board  # noqa: E402
from orchestrator.spec.runconfig import RunConfig  # noqa: E402
from orchestrator.task.outcome import Recorder  # noqa: E402


class Slurm:
    """squeue / sacct answers for the jobs of the root, in process (a Runner)."""

    def __init__(self) -> None:
        self.jobs: dict[str, tuple[str, str]] = {}  # id -> (state, name)
        self.calls = 0

    def __call__(self, argv: Sequence[str], timeout: float, /) -> subprocess.CompletedProcess[str]:
        self.calls += 1
        ids = next((a.split("=", 1)[1].split(",") for a in argv if a.startswith("--jobs=")), [])
        out = []
        for job_id in ids:
            state, name = self.jobs.get(job_id, ("", ""))
            if not state or (argv[0] == "squeue" and state != "RUNNING"):
                continue
            out.append(f"{job_id}|{state}|None|node1|10:05|0|N/A|{name}" if argv[0] == "squeue" else
                       f"{job_id}|{state}|0:0|node1|00:10:05|605|cpu=4,gres/gpu=2|Unknown|{name}")
        return subprocess.CompletedProcess(list(argv), 0, "\n".join(out) + "\n", "")


def _records(folder: Path, job_id: str, kinds: Sequence[str]) -> list[Recorder]:
    recorders = []
    for rank, kind in enumerate(kinds):
        recorder = Recorder()
        recorder.start(outcome_path(folder, rank), rank=rank, world_size=len(kinds), run=job_id, restart=0,
                       stopped_by="srun", init_timeout=60, collective_timeout=60)
        recorder.step(2, 50)
        if kind != "running":
            reason = "ValueError: boom" if kind == "failed" else None
            recorder.finish(kind, 0 if kind == "completed" else 1, reason=reason)
        recorders.append(recorder)
    return recorders


def fill(root: Path, folders: int, running: int, slurm: Slurm) -> list[tuple[Progress, StepsLog]]:
    """The job folders; the writers of the running jobs (to change one folder per round)."""
    writers = []
    for i in range(folders):
        job_id, name = str(1000 + i), f"job{i}"
        state = "RUNNING" if i >= folders - running else ("FAILED" if i % 98 == 0 else "COMPLETED")
        folder = create_job_dir(root / f"{name}-20261125-{10 + i // 3600:02d}{i % 3600 // 60:02d}{i % 60:02d}-{i:06x}")
        write_config(folder, RunConfig(mode="slurm", job_name=name, job_file="/jobs/mnist.py", params={"epochs": 3},
                                       nodes=1, gpus_per_node=2, tasks_per_node=2, cpus_per_task=2, job_dir=str(folder),
                                       created="2026-11-25T10:00:00"))
        write_private(folder / "job_id", job_id + "\n")
        slurm.jobs[job_id] = (state, name)
        steps = StepsLog(folder / "steps.jsonl")
        for step in range(20):
            steps.scalars({"train/loss": 2.0 / (step + 1)}, step)
        metrics = MetricsLog(folder / "metrics.jsonl")
        for epoch in (1, 2):
            metrics.append(EpochMetrics(epoch=epoch, epochs=3, values={"train_loss": 1.0 / epoch}, names=(),
                                        samples_per_s=5000.0, seconds=10.0, world_size=2, train_samples=60000,
                                        steps=469))
        progress = Progress(folder / "progress.json", epochs=3, every=0, world_size=2)
        progress.start_epoch(2, steps=469, start_step=0)
        progress.step(100, 6400, lambda: 0.25)
        kinds = {"RUNNING": ("running", "running"), "FAILED": ("waited", "failed")}.get(state, ("completed",) * 2)
        _records(folder, job_id, kinds)
        if state != "RUNNING":
            write_attempts(folder, [{"attempt": 0, "requeue": 0, "job": job_id, "kind": kinds[1], "started": 1.0,
                                     "ended": 600.0, "first_step": 30.0, "last_step_time": 590.0}])
        if state == "COMPLETED":
            write_text_atomic(folder / "result.json", '{"goodput": {"goodput": 0.93}, "startup": {"imports": 2.0}}\n')
        else:
            steps.close("running")
        if state == "RUNNING":
            writers.append((progress, steps))
    return writers


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def measure(board: Board, clock: Clock, interval: float, rounds: int, change: Any = None) -> tuple[list[float], float]:
    """CPU seconds of each refresh, and the files opened per refresh (mean)."""
    opened = [0]
    real = os.open

    def counting(path: Any, *args: Any, **kwargs: Any) -> int:
        opened[0] += 1
        return real(path, *args, **kwargs)

    times = []
    for i in range(rounds):
        clock.now += interval
        if change is not None:
            change(i)
        os.open = counting  # type: ignore[assignment]
        start = time.process_time()
        board.refresh()
        times.append(time.process_time() - start)
        os.open = real
    return times, opened[0] / max(rounds, 1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--folders", type=int, default=1000)
    parser.add_argument("--running", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--interval", type=float, default=0.5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="orch-bench-top-") as tmp:
        root = Path(tmp) / "jobs"
        slurm = Slurm()
        started = time.monotonic()
        writers = fill(root, args.folders, args.running, slurm)
        print(f"# {args.folders} job folders ({args.running} running) written in {time.monotonic() - started:.1f} s")
        clock = Clock()
        board = Board(root, limit=0, runner=slurm, clock=clock, remote=False)
        first, first_opened = measure(board, clock, args.interval, 1)
        calls_first = slurm.calls
        quiet, quiet_opened = measure(board, clock, args.interval, args.rounds)
        calls_quiet = slurm.calls - calls_first

        def change(i: int) -> None:
            progress, steps = writers[i % len(writers)]
            progress.step(101 + i, 6464 + 64 * i, lambda: 0.2)
            progress._next_json = 0.0  # the next step writes progress.json (rank 0 does every 5 s)
            steps.scalars({"train/loss": 0.2}, 100 + i)

        busy, busy_opened = measure(board, clock, args.interval, args.rounds, change if writers else None)
        calls_busy = slurm.calls - calls_first - calls_quiet
    rows = [("first refresh (every folder read)", first, first_opened, calls_first),
            ("steady state, nothing changed", quiet, quiet_opened, calls_quiet),
            ("steady state, 1 folder changed per refresh", busy, busy_opened, calls_busy)]
    print(f"| refresh ({args.folders} job folders) | CPU median | CPU mean | files opened per refresh "
          f"| Slurm queries | share of a core at --interval {args.interval:g} |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, times, opened, calls in rows:
        median, mean = statistics.median(times), statistics.fmean(times)
        runs = f" ({len(times)} refreshes)" if len(times) > 1 else ""
        print(f"| {label}{runs} | {median * 1000:.1f} ms | {mean * 1000:.1f} ms | {opened:.1f} | {calls} "
              f"| {mean / args.interval:.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
