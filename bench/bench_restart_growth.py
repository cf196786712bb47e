"""How does recovery from a killed rank grow with the number of ranks? A benchmark, not a test.

On this machine, under ``orch run`` (one node, ``--nproc N``, CPU/gloo), the job ``tests/jobs/faulty.py``
(2 epochs of ``--steps`` steps at every world size: the sample count grows with the ranks) in which rank
``--kill-rank`` sends itself SIGKILL in the middle of epoch 2 (``fault=kill``, only in the first attempt:
``fault_restart=0``), recovered with ``--max-restarts 1`` by each restart mode of ``launcher.restart``:

* **step** (the default): ``orch run`` ends every rank and starts a new set of processes;
* **in-process**: the killed rank's agent forks a new worker; the other ranks keep their processes and
  form a new process group with it.

For each mode and world size, ``--repeats`` runs; the table shows the medians of

* ``kill->step``: from the kill to the end of the first training step of the next attempt. The kill
  happens in the forward pass right after the last recorded step (``attempts.json``'s ``last_step_time``),
  so this counts from that step's end (it overstates by at most one step's data loading);
* ``recovery_s``: ``attempts.json``'s own figure, from the failure as the records saw it (``failed_at``)
  to that first step;

and where the time went, on rank 0's records (``attempts.json``, ``logs/rank0.outcome.json``, the
start-up phases of ``result.json``, which are the restarted attempt's):

* ``detect``: the kill to ``failed_at`` (the earliest end of a failed rank that the records hold);
* ``decide``: ``failed_at`` to the attempt's record (``ended``: the agent's or ``orch run``'s decision);
* ``restart``: the decision to rank 0's next attempt starting (in-process: the survivor taking the
  decision; step: the new process's start): what is left of ``kill->step`` after the other columns;
* rank 0's start-up phases (``records/startup.py``): ``imports`` (its start to the job file loaded, plus
  what is left of the ``torch._dynamo`` import: ``import torch`` in a new process), ``rendezvous``
  (``init_process_group``: every rank at the store; a rank that starts first waits here for the slowest),
  ``build`` (``build`` + ``ddp``: the model, the checkpoint read, DDP's broadcast), ``first step``.

Then the lost steps (``lost_steps``: redone after the resume), how many surviving ranks kept their
process (``pids`` of the two attempts) and whether the final parameters (``param_digest``, every rank's
equal) equal those of an uninterrupted run of the same job at the same world size (``--max-restarts 0``,
no fault, run once per world size). A world size may be given twice (``--ranks 2,4,8,16,2``) to see the
noise of a loaded machine.

    .venv/bin/python bench/bench_restart_growth.py [--ranks 2,4,8,16] [--repeats 2] [--modes step,in-process]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FAULTY = ROOT / "tests" / "jobs" / "faulty.py"
ORCH = str(Path(sys.executable).with_name("orch"))
MODES = ("step", "in-process")
CLUSTER = """name: bench
partitions:
  - {{name: cpu, nodes: 'node1', gpus_per_node: 0, cpus_per_node: 2, mem_per_node: 4G}}
launcher: {{init_timeout: {init}, collective_timeout: {collective}, job_root: '{root}', restart: {restart},
            max_restarts: 1}}
"""
# orch run refuses more than 4 ranks per CPU core (local/plan.py's check_nproc); the bench wants 16 ranks on a
# 2-core machine on purpose, so above that it runs the same CLI with only that check's limit replaced
LIFT_GUARD = ("import sys; import orchestrator.local.plan as plan; plan.max_local_ranks = lambda cpus: 1024; "
              "from orchestrator.cli import main; sys.argv[0] = 'orch'; sys.exit(main())")
PHASES = ("detect", "decide", "restart", "imports", "rendezvous", "build", "first step")
# the columns of rank 0's start-up phases (records/startup.py) of the restarted attempt
STARTUP = {"imports": ("imports", "import_dynamo"), "rendezvous": ("process_group",), "build": ("build", "ddp"),
           "first step": ("first_step",)}


@dataclass
class Run:
    """One faulty run's figures (seconds; None where a record was missing)."""

    kill_to_step: float | None
    recovery: float | None
    phases: dict[str, float | None]
    lost: int | None
    kept: int  # surviving ranks whose process id stayed the same across the restart
    survivors: int
    digest: str | None
    wall: float


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def params(world: int, steps: int, batch: int) -> list[str]:
    """The job's parameters: ``steps`` steps per epoch at every world size."""
    return [f"samples={steps * batch * world}", f"batch_size={batch}", "test_samples=" + str(16 * world),
            "epochs=2"]


def guard() -> int:
    """The most ranks ``orch run`` starts on this machine (4 per CPU core, at least 8)."""
    from orchestrator.local.plan import available_cpus
    from orchestrator.spec.numbers import max_local_ranks

    return max_local_ranks(available_cpus())


def orch_run(cluster: Path, world: int, extra: list[str], timeout: float) -> tuple[dict[str, Any], float]:
    """``orch run`` of the job; above the machine's guard, the same CLI with only the guard lifted."""
    command = [ORCH] if world <= guard() else [sys.executable, "-c", LIFT_GUARD]
    began = time.monotonic()
    done = subprocess.run([*command, "run", "--cluster", str(cluster), "--json", str(FAULTY), "--nproc", str(world),
                           *extra], capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - began
    if done.returncode != 0:
        raise SystemExit(f"orch run --nproc {world} {' '.join(extra)} exited {done.returncode}:\n"
                         f"{done.stderr[-3000:]}")
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary, wall


def measure(summary: dict[str, Any], wall: float, kill_rank: int) -> Run:
    job_dir = Path(summary["job_dir"])
    hist: list[dict[str, Any]] = json.loads((job_dir / "attempts.json").read_text())
    if len(hist) != 2:
        raise SystemExit(f"{job_dir}: {len(hist)} attempts, expected 2 (the killed one and its restart)")
    failed, again = hist
    result = summary["result"]
    startup: dict[str, Any] = result.get("startup", {})
    kill = _num(failed.get("last_step_time"))
    failed_at, decided, first = _num(failed.get("failed_at")), _num(failed.get("ended")), _num(again.get("first_step"))
    phases: dict[str, float | None] = {"detect": _minus(failed_at, kill), "decide": _minus(decided, failed_at)}
    for name, keys in STARTUP.items():
        parts = [_num(startup.get(k)) for k in keys]
        phases[name] = None if None in parts else sum(p for p in parts if p is not None)
    started = sum(phases[k] or 0.0 for k in STARTUP)  # rank 0's start of the attempt to its first step
    phases["restart"] = _minus(_minus(first, decided), started)
    before, after = failed.get("pids") or {}, again.get("pids") or {}
    survivors = [r for r in before if r != str(kill_rank)]
    kept = sum(1 for r in survivors if before.get(r) is not None and before.get(r) == after.get(r))
    digests = set(result.get("param_digests") or [])
    digest = result.get("param_digest") if len(digests) <= 1 else None  # ranks that disagree match nothing
    return Run(kill_to_step=_minus(first, kill), recovery=_num(failed.get("recovery_s")), phases=phases,
               lost=failed.get("lost_steps"), kept=kept, survivors=len(survivors), digest=digest, wall=wall)


def median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def cell(value: float | None, width: int, digits: int = 2) -> str:
    return f"{'-' if value is None else f'{value:.{digits}f}':>{width}}"


def table(mode: str, rows: list[tuple[int, list[Run], str]]) -> None:
    print(f"\nrestart: {mode} (medians; seconds)")
    head = f"{'ranks':>5} {'runs':>4} {'kill->step':>10} {'recovery_s':>10} {'range':>11} "
    head += " ".join(f"{p:>10}" for p in PHASES)
    print(head + f" {'lost':>4} {'kept':>7} {'run wall':>8}  params")
    for world, runs, clean in rows:
        spans = [r.kill_to_step for r in runs if r.kill_to_step is not None]
        spread = f"{min(spans):.2f}-{max(spans):.2f}" if spans else "-"
        lost = sorted({str(r.lost) for r in runs})
        kept = f"{min(r.kept for r in runs)}/{runs[0].survivors}"
        equal = sum(1 for r in runs if r.digest is not None and r.digest == clean)
        line = (f"{world:>5} {len(runs):>4} {cell(median([r.kill_to_step for r in runs]), 10)} "
                f"{cell(median([r.recovery for r in runs]), 10)} {spread:>11} ")
        line += " ".join(cell(median([r.phases[p] for r in runs]), 10) for p in PHASES)
        line += f" {','.join(lost):>4} {kept:>7} {cell(median([r.wall for r in runs]), 8, 1)}  "
        print(line + ("equal" if equal == len(runs) else f"DIFFERENT in {len(runs) - equal} of {len(runs)}"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", default="2,4,8,16", help="world sizes, in order (one may repeat: 2,4,8,16,2)")
    parser.add_argument("--repeats", type=int, default=2, help="faulty runs per mode and world size")
    parser.add_argument("--modes", default=",".join(MODES), help="launcher.restart values: step,in-process")
    parser.add_argument("--steps", type=int, default=16, help="training steps per epoch (2 epochs)")
    parser.add_argument("--batch", type=int, default=8, help="batch size per rank")
    parser.add_argument("--kill-rank", type=int, default=1, help="the rank that dies of SIGKILL")
    parser.add_argument("--kill-step", type=int, default=None,
                        help="its forward pass (counted from 0, the bucket-settling pass first) that dies; "
                             "default: the middle of epoch 2")
    parser.add_argument("--init-timeout", type=int, default=300, help="launcher.init_timeout (s; orch's default)")
    parser.add_argument("--collective-timeout", type=int, default=30,
                        help="launcher.collective_timeout (s; orch's default)")
    parser.add_argument("--job-root", help="keep the job folders here (default: a temporary folder, removed)")
    args = parser.parse_args()
    worlds = [int(w) for w in args.ranks.split(",") if w.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if any(m not in MODES for m in modes) or any(w < 2 or args.kill_rank >= w for w in worlds):
        parser.error(f"--modes from {MODES}; every world size >= 2 and above --kill-rank")
    kill_step = args.kill_step if args.kill_step is not None else 1 + args.steps + args.steps // 2
    fault = ["fault=kill", f"fault_rank={args.kill_rank}", f"fault_step={kill_step}", "fault_restart=0"]
    limit = 120.0 + 30.0 * max(worlds) + args.init_timeout + args.collective_timeout
    with tempfile.TemporaryDirectory(prefix="orch-growth-") as tmp:
        clusters = {}
        for mode in (*modes, "clean"):
            clusters[mode] = Path(tmp) / f"{mode}.yaml"
            clusters[mode].write_text(CLUSTER.format(root=args.job_root or Path(tmp) / "jobs", init=args.init_timeout,
                                                     collective=args.collective_timeout,
                                                     restart="step" if mode == "clean" else mode))
        clean: dict[int, str] = {}
        rows: dict[str, list[tuple[int, list[Run], str]]] = {m: [] for m in modes}
        for world in worlds:
            job = params(world, args.steps, args.batch)
            if world not in clean:
                summary, wall = orch_run(clusters["clean"], world, [*job, "--max-restarts", "0"], limit)
                clean[world] = summary["result"]["param_digest"]
                print(f"{world} ranks: uninterrupted run {wall:.1f} s", file=sys.stderr, flush=True)
            for mode in modes:
                runs = []
                for _ in range(args.repeats):
                    summary, wall = orch_run(clusters[mode], world, [*job, *fault], limit)
                    runs.append(measure(summary, wall, args.kill_rank))
                    print(f"{world} ranks, {mode}: kill->step {cell(runs[-1].kill_to_step, 0)} s, "
                          f"run {wall:.1f} s", file=sys.stderr, flush=True)
                rows[mode].append((world, runs, clean[world]))
    print(f"tests/jobs/faulty.py under orch run (CPU, gloo): {args.steps} steps per epoch, batch {args.batch} per "
          f"rank, rank {args.kill_rank} killed at its forward pass {kill_step} (epoch 2) in the first attempt; "
          f"init_timeout {args.init_timeout} s, collective_timeout {args.collective_timeout} s")
    if max(worlds) > guard():
        print(f"above {guard()} ranks (4 per CPU core: orch run's limit here) the CLI ran with that limit lifted")
    for mode in modes:
        table(mode, rows[mode])
    return 0


if __name__ == "__main__":
    sys.exit(main())
