"""``bench_recovery.py --growth N,... --slurm``: recovery from a killed rank on a Slurm cluster as the job grows.

At each node count N (``--growth``), ``--ranks-per-node`` ranks a node (1: a rank per node), on the cluster at
``--cluster`` (``ORCH_SLURM_NODES=16 tests/slurm/cluster.sh up`` with its own ``ORCH_SLURM_STATE`` and
``ORCH_SLURM_PORT_BASE``), the job ``tests/jobs/faulty.py`` (2 epochs of 16 steps at every size, as under
``orch run``) runs

* once uninterrupted (``--max-restarts 0``): its start-up and its final parameters;
* ``--repeats`` times with the first rank of the second node killed (SIGKILL, in the middle of epoch 2, first
  attempt only), restarted with ``--max-restarts 1`` by each ``launcher.restart``: ``in-process`` (the killed
  rank's agent forks a new worker, the others keep their processes) and ``step`` (a new srun step in the same
  allocation).

Every job is held to the first N nodes (``--exclude`` the rest), so a step restart has no free node to move to
and stays in its allocation. The faulty runs are read as ``bench_restart_growth.py`` reads them (kill to the next
attempt's first step, and where the time went); the start-up table has, for the uninterrupted job: the queue
(submit to the batch script's start), the batch script's start to every rank's first training step, rank 0's
imports and rendezvous (``init_process_group``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_recovery import with_restart
from bench_restart_growth import FAULTY, ORCH, Run, measure, params, table

STEPS = 16  # training steps per epoch at every size (2 epochs; the kill in the middle of epoch 2)
BATCH = 8
ENDED = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED"})
MODES = ("in-process", "step")


def counts(text: str) -> list[int]:
    """``--growth 2,4,8``: the node counts, each at least 2 (the kill is on the second node)."""
    values = [int(part) for part in text.split(",") if part.strip()]
    if not values or any(v < 2 for v in values):
        raise ValueError(f"--growth {text!r}: node counts of 2 or more, such as 2,4,8,16")
    return values


def excluded(names: Sequence[str], count: int) -> list[str]:
    """The nodes a job of ``count`` nodes must not get: all but the first ``count`` (node2 before node10)."""
    ordered = sorted(set(names), key=lambda name: (len(name), name))
    if count > len(ordered):
        raise ValueError(f"{count} nodes asked, the cluster has {len(ordered)}: bring it up with ORCH_SLURM_NODES")
    return ordered[count:]


def fault(rank: int) -> list[str]:
    """SIGKILL of ``rank`` at its forward pass in the middle of epoch 2, in the first attempt only."""
    return ["fault=kill", f"fault_rank={rank}", f"fault_step={1 + STEPS + STEPS // 2}", "fault_restart=0"]


@dataclass
class Startup:
    """The uninterrupted job's start-up (seconds; None where a record was missing)."""

    queue: float | None  # submit to the batch script's start
    to_first_step: float | None  # the batch script's start to the last rank's first training step
    imports: float | None  # rank 0's
    rendezvous: float | None  # rank 0's init_process_group (its wait for the slowest rank included)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def startup_of(submitted: float, hist: list[dict[str, Any]], outcomes: list[dict[str, Any]],
               phases: dict[str, Any]) -> Startup:
    """The start-up from attempts.json, the ranks' outcome records and result.json's ``startup``."""
    began = _num(hist[0].get("batch_started")) if hist else None
    firsts = [_num(o.get("first_step")) for o in outcomes]
    last = None if not firsts or None in firsts else max(f for f in firsts if f is not None)
    return Startup(queue=None if began is None else began - submitted,
                   to_first_step=None if began is None or last is None else last - began,
                   imports=_num(phases.get("imports")), rendezvous=_num(phases.get("process_group")))


def startup_table(rows: list[tuple[int, int, Startup]]) -> str:
    """One line a node count: nodes, ranks, then :class:`Startup`'s figures."""
    lines = [f"{'nodes':>5} {'ranks':>5} {'queue':>6} {'batch->every first step':>23} {'imports':>8} "
             f"{'rendezvous':>10}"]
    for nodes, ranks, s in rows:
        lines.append(f"{nodes:>5} {ranks:>5} {_cell(s.queue, 6)} {_cell(s.to_first_step, 23)} {_cell(s.imports, 8)} "
                     f"{_cell(s.rendezvous, 10)}")
    return "\n".join(lines)


def _cell(value: float | None, width: int) -> str:
    return f"{'-' if value is None else f'{value:.2f}':>{width}}"


def _ended(job_id: str, cluster: str, timeout: float) -> str:
    """The job's final state: squeue (a cheap client, once a second) until the job leaves the queue, then one
    ``orch status`` (a resubmitted or requeued job would show as a new id: neither happens here)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        queued = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True,
                                timeout=30).stdout.strip()
        if not queued:
            for _ in range(10):
                out = subprocess.run([ORCH, "status", job_id, "--json", "--cluster", cluster], capture_output=True,
                                     text=True, timeout=120, check=True).stdout
                state = str(json.loads(out)["state"])
                if state in ENDED:
                    return state
                time.sleep(1)
            return state
        time.sleep(1)
    raise SystemExit(f"job {job_id} still queued after {timeout:.0f} s")


def submit(cluster: str, args: list[str], timeout: float) -> tuple[Path, float, str]:
    """``orch submit`` of the faulty job; its folder, when it was submitted, and its final state."""
    submitted = time.time()
    done = subprocess.run([ORCH, "submit", str(FAULTY), "--cluster", cluster, "--json", *args], capture_output=True,
                          text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"orch submit {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    data = json.loads(done.stdout)
    return Path(data["job_dir"]), submitted, _ended(str(data["job_id"]), cluster, timeout)


def _json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.is_file() else {}


def run(cluster: str, node_counts: list[int], repeats: int, per_node: int) -> int:
    """Every node count, uninterrupted then the faulty runs of each mode; the tables."""
    names = subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True, check=True,
                           timeout=30).stdout.split()
    kill_rank = per_node  # the first rank of the second node
    timeout = 300.0 + 30.0 * max(node_counts) * per_node
    starts: list[tuple[int, int, Startup]] = []
    rows: dict[str, list[tuple[int, list[Run], str]]] = {m: [] for m in MODES}
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="orch-recovery-slurm-") as tmp:
        files = {m: with_restart(cluster, m, tmp) for m in MODES}
        for nodes in node_counts:
            ranks = nodes * per_node
            shape = ["--nodes", str(nodes), "--gpus", str(per_node), "--cpus-per-task", "1",
                     *(["--exclude", ",".join(others)] if (others := excluded(names, nodes)) else []),
                     *params(ranks, STEPS, BATCH)]
            job_dir, submitted, state = submit(files["step"], [*shape, "--max-restarts", "0"], timeout)
            result = _json(job_dir / "result.json")
            outcomes = [_json(p) for p in sorted((job_dir / "logs").glob("rank*.outcome.json"))]
            starts.append((nodes, ranks, startup_of(submitted, _json(job_dir / "attempts.json"), outcomes,
                                                    result.get("startup", {}))))
            clean = str(result.get("param_digest"))
            print(f"{nodes} nodes: uninterrupted {state}", file=sys.stderr, flush=True)
            for mode in MODES:
                runs = []
                for _ in range(repeats):
                    began = time.monotonic()
                    job_dir, _, state = submit(files[mode], [*shape, "--max-restarts", "1", *fault(kill_rank)],
                                               timeout)
                    wall = time.monotonic() - began
                    if state != "COMPLETED":
                        failures.append(f"{nodes} nodes, {mode}: {state} ({job_dir})")
                        continue
                    runs.append(measure({"job_dir": str(job_dir), "result": _json(job_dir / "result.json")}, wall,
                                        kill_rank))
                    print(f"{nodes} nodes, {mode}: kill->step {_cell(runs[-1].kill_to_step, 0)} s", file=sys.stderr,
                          flush=True)
                if runs:
                    rows[mode].append((ranks, runs, clean))
    print(f"tests/jobs/faulty.py on the Slurm cluster of {cluster}: {per_node} rank(s) a node, {STEPS} steps an "
          f"epoch, batch {BATCH} a rank, rank {kill_rank} (the second node's first) killed in epoch 2 of the first "
          f"attempt; the cluster file's timeouts; medians of {repeats} run(s) (the tables' 'ranks': nodes x "
          f"{per_node})")
    print("\nuninterrupted job (one run; seconds)")
    print(startup_table(starts))
    for mode in MODES:
        table(mode, rows[mode])
    for line in failures:
        print(f"not measured: {line}")
    return 1 if failures else 0
