"""What does orch cost between "submit" and training? Prints a table (a benchmark, not a test).

On a running Slurm cluster (the local test cluster: ``tests/slurm/cluster.sh up``), for one shape
(default 2 nodes x 2 GPUs), alternately:

* **orch**: ``orch submit bench/jobs/first_step.py --nodes N --gpus G`` (a fresh CLI process), until
  every rank has entered its first training step (each rank stamps ``time.time()`` in a forward
  pre-hook of the model: after the launcher, process group set-up, the job's build and DDP);
* **bare**: ``sbatch`` of a hand-written script of the same shape whose ``srun`` runs
  ``python -c "import torch"`` and stamps the time, until every task has stamped;
* **bare + dynamo**: the same, also importing ``torch._dynamo``, which the constructor of
  ``DistributedDataParallel`` imports (torch 2.x): what any DDP program pays before its first step;
* **orch, no prefetch**: ``orch submit`` with ``ORCH_PREFETCH_DYNAMO=0``: ``torch._dynamo`` is imported
  by DDP's constructor after the rendezvous (the "before" of the prefetch in records/startup.py).

Then the start-up phases that rank 0 recorded in ``result.json`` (``startup``), median per phase,
with and without the prefetch: ``import_torch`` (torch's own import) apart from orch's part
(``imports`` minus ``import_torch``: orch's runtime and the job file; ``batch``: the script's set-up;
``process_group``, ``import_dynamo``, ``build``, ``ddp``, ``first_step``; summed as "orch part")
and Slurm's (``queued``, ``to_task``).

Both clocks start before the submitting command and stop at the last rank's stamp (one host, one
clock). The difference is what orch costs over the unavoidable part (scheduling, slurmd starting
the tasks, importing torch). Runs alternate so that other load on the machine hits both alike;
the table shows each pair and the medians.

    .venv/bin/python bench/bench_submit_latency.py [--runs 3] [--nodes 2] [--gpus 2]
        [--cluster $ORCH_SLURM_STATE/cluster.yaml]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
ORCH = str(Path(sys.executable).parent / "orch")
JOB = ROOT / "bench" / "jobs" / "first_step.py"
PARAMS = ["epochs=1", "samples=256", "test_samples=0", "max_steps_per_epoch=2", "checkpoint=false"]
TIMEOUT = 300.0

BARE_SCRIPT = """#!/bin/bash
#SBATCH --job-name=bare
#SBATCH --nodes={nodes}
#SBATCH --ntasks-per-node={tasks}
#SBATCH --gpus-per-node={tasks}
#SBATCH --cpus-per-task={cpus}
#SBATCH --time=00:10:00
#SBATCH --partition={partition}
#SBATCH --output={folder}/slurm-%j.out
srun --cpus-per-task={cpus} {python} -c {code}
"""
BARE_CODE = ("import os, time, torch{extra}; "
             "open(os.path.join({folder!r}, 'rank' + os.environ['SLURM_PROCID']), 'w')"
             ".write(repr(time.time()))")


def wait_for_stamps(folder: Path, count: int, start: float) -> float:
    """Seconds from ``start`` to the last of ``count`` stamp files in ``folder``."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        stamps = [p for p in folder.glob("rank*") if p.read_text().strip()] if folder.is_dir() else []
        if len(stamps) == count:
            return max(float(p.read_text()) for p in stamps) - start
        time.sleep(0.05)
    raise SystemExit(f"no {count} stamps in {folder} after {TIMEOUT:.0f} s")


def wait_gone(job_id: str, env: dict[str, str]) -> None:
    """Until the job has left the running states, so that runs do not overlap."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        out = subprocess.run(["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T"], capture_output=True,
                             text=True, env=env, check=False).stdout.strip()
        if out not in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING"):
            return
        time.sleep(0.2)


def run_orch(cluster_yaml: Path, nodes: int, gpus: int, cpus: int, env: dict[str, str],
             prefetch: bool = True) -> tuple[float, dict[str, float]]:
    """Seconds to the last rank's first step, and rank 0's start-up phases."""
    env = {**env, "ORCH_PREFETCH_DYNAMO": "1" if prefetch else "0"}
    start = time.time()
    proc = subprocess.run([ORCH, "submit", str(JOB), "--nodes", str(nodes), "--gpus", str(gpus),
                           "--cpus-per-task", str(cpus), "--cluster", str(cluster_yaml), "--json", *PARAMS],
                          capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"orch submit failed:\n{proc.stderr}")
    data = json.loads(proc.stdout)
    took = wait_for_stamps(Path(data["job_dir"]) / "first_step", nodes * gpus, start)
    wait_gone(str(data["job_id"]), env)
    result = Path(data["job_dir"]) / "result.json"
    startup = json.loads(result.read_text())["startup"] if result.is_file() else {}
    return took, startup


def run_bare(workdir: Path, index: int, nodes: int, gpus: int, cpus: int, partition: str,
             env: dict[str, str], extra_import: str = "") -> float:
    folder = workdir / f"bare{extra_import}-{index}"
    folder.mkdir()
    script = folder / "bare.sh"
    code = BARE_CODE.format(folder=str(folder), extra=f", {extra_import}" if extra_import else "")
    script.write_text(BARE_SCRIPT.format(nodes=nodes, tasks=gpus, cpus=cpus, partition=partition,
                                         folder=folder, python=shlex.quote(sys.executable),
                                         code=shlex.quote(code)))
    start = time.time()
    proc = subprocess.run(["sbatch", "--parsable", str(script)], capture_output=True, text=True, env=env,
                          check=False)
    if proc.returncode != 0:
        raise SystemExit(f"sbatch failed:\n{proc.stderr}")
    took = wait_for_stamps(folder, nodes * gpus, start)
    wait_gone(proc.stdout.strip().split(";")[0], env)
    return took


def _row(label: str, bare: float, dynamo: float, orch: float, orch_before: float) -> str:
    return (f"{label:>3}  {bare:>16.2f} s  {dynamo:>11.2f} s  {orch:>9.2f} s  {orch_before:>16.2f} s  "
            f"{orch - bare:>+9.2f} s  {orch - dynamo:>+18.2f} s")


def phase_table(after: list[dict[str, float]], before: list[dict[str, float]]) -> str:
    """Median seconds per start-up phase (rank 0), with and without the torch._dynamo prefetch."""
    from orchestrator.records.startup import PHASES

    def med(runs: list[dict[str, float]], phase: str) -> float | None:
        values = [r[phase] for r in runs if phase in r]
        return statistics.median(values) if values else None

    def own(run: dict[str, float]) -> float:
        return sum(v for k, v in run.items() if k not in ("queued", "to_task", "import_torch")) - run.get(
            "import_torch", 0.0)

    lines = [f"{'phase (rank 0, median)':<28}  {'prefetch':>9}  {'no prefetch':>11}"]
    for phase in PHASES:
        a, b = med(after, phase), med(before, phase)
        if a is None and b is None:
            continue
        lines.append(f"  {phase:<26}  {a if a is not None else float('nan'):8.2f}s  "
                     f"{b if b is not None else float('nan'):10.2f}s")
    own_a = statistics.median(own(r) for r in after) if after else float("nan")
    own_b = statistics.median(own(r) for r in before) if before else float("nan")
    lines.append(f"  {'orch part (no torch import)':<26}  {own_a:8.2f}s  {own_b:10.2f}s")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--gpus", type=int, default=2, help="GPUs (= tasks) per node")
    parser.add_argument("--cpus-per-task", type=int, default=1)
    state = os.environ.get("ORCH_SLURM_STATE", "/tmp/orch-slurm")
    parser.add_argument("--cluster", default=f"{state}/cluster.yaml", help="cluster.yaml of the cluster")
    args = parser.parse_args()
    env = dict(os.environ)
    if "SLURM_CONF" not in env and Path(state, "etc", "slurm.conf").is_file():
        env["SLURM_CONF"] = f"{state}/etc/slurm.conf"
    with tempfile.TemporaryDirectory(prefix="orch-bench-") as tmp:
        workdir = Path(tmp)
        data = yaml.safe_load(Path(args.cluster).read_text())
        data["launcher"]["job_root"] = str(workdir / "jobs")
        partition = data["defaults"].get("partition") or data["partitions"][0]["name"]
        cluster_yaml = workdir / "cluster.yaml"
        cluster_yaml.write_text(yaml.safe_dump(data))
        shape = f"{args.nodes}x{args.gpus}"
        print(f"submit -> every rank in its first training step, {shape} ({args.nodes * args.gpus} ranks), "
              f"cpus-per-task {args.cpus_per_task}, {args.runs} run(s) each, alternating")
        print(f"{'run':>3}  {'bare: import torch':>18}  {'bare + dynamo':>13}  {'orch submit':>11}  "
              f"{'orch, no prefetch':>18}  {'orch - bare':>11}  {'orch - (bare+dynamo)':>20}")
        rows: list[tuple[float, float, float, float]] = []
        phases_after: list[dict[str, float]] = []
        phases_before: list[dict[str, float]] = []
        shape_args = (args.nodes, args.gpus, args.cpus_per_task)
        for index in range(args.runs):
            b = run_bare(workdir, index, *shape_args, partition, env)
            d = run_bare(workdir, index, *shape_args, partition, env, extra_import="torch._dynamo")
            o, phases = run_orch(cluster_yaml, *shape_args, env)
            o_before, phases_no = run_orch(cluster_yaml, *shape_args, env, prefetch=False)
            rows.append((b, d, o, o_before))
            phases_after.append(phases)
            phases_before.append(phases_no)
            print(_row(str(index + 1), b, d, o, o_before), flush=True)
        print(_row("med", *(statistics.median(col) for col in zip(*rows, strict=True))))
        print()
        print(phase_table(phases_after, phases_before))
        load = os.getloadavg()[0]
        print(f"(load average at the end: {load:.1f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
