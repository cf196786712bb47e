"""How long does a crash cost? In-job restart vs the requeue path. A benchmark, not a test.

On a running Slurm cluster (the local test cluster: ``tests/slurm/cluster.sh up``), the same job
(``tests/jobs/faulty.py``, 2 nodes x 1 task, CPU/gloo) in which rank 1 dies of SIGKILL in the middle of
epoch 2 (``fault=kill``, only in its first run: ``fault_restart=0``), recovered

* **in-job**: ``--max-restarts 1``, ``launcher.restart: step``: the batch script starts a new srun step in the
  same allocation, which resumes from the newest checkpoint;
* **requeue**: ``--max-restarts 0``: the job fails, then ``scontrol requeue`` puts it back in the queue
  (Slurm's own requeue path, with its begin-time delay), and the new run resumes from the checkpoint;
* **resubmit** (a cluster of three nodes or more): ``--max-restarts 1`` with a free node left: the blamed
  node has no spare, so the batch script submits the job again without it (``sbatch --exclude``) and the
  new job resumes from the checkpoint on another node.

The in-job and requeue runs exclude every node past the first two, so no node is free to move to.
A fourth path, **in-process** (``launcher.restart: in-process``), restarts rank 1 inside the same srun step:
the other rank's process stays and forms a new process group with rank 1's new worker.

``--local`` runs the ``orch run`` variants instead (no Slurm): the same job on 2 local ranks, restarted by
step and in-process, and ``tests/scripts/warm_imports.py`` (rank 1 fails once), restarted by step and warm:
recovery, the restarted attempt's imports (the start-up record; the script's own timing of its imports)
and whether the survivor kept its process.

``--growth 2,4,8,16`` (no Slurm) runs every path at each world size under ``orch run --nproc N`` on this machine,
all in one run: the start-up of an uninterrupted run (from the launch to every rank's first training step, and
rank 0's rendezvous), then the recovery from a kill -9 of rank 1 (``tests/jobs/faulty.py``, 16 steps per epoch,
killed in the middle of epoch 2) by orch's entrypoint in-process and by step, and of the script
``tests/scripts/warm_imports.py`` (rank 1 exits 1 once) warm (in-process) and by step (a script has no training
step: from the failure to the restarted world's end). ``--growth 2,4,8 --slurm`` runs the same kill on the Slurm
cluster at ``--cluster`` at each node count, ``--ranks-per-node`` ranks a node (1 by default), ``--repeats`` runs
each, in-process and by step (``recovery_slurm.py``; N nodes: ``ORCH_SLURM_NODES=16 tests/slurm/cluster.sh up``
with its own ``ORCH_SLURM_STATE`` and ``ORCH_SLURM_PORT_BASE``).

Prints each path's recovery time (``attempts.json``: from the failure to the first training step of the
next attempt), their ratio, the lost steps, and whether the final parameters equal an uninterrupted
run's (``orch run`` of the same job without the fault, same world size).

    .venv/bin/python bench/bench_recovery.py [--cluster $ORCH_SLURM_STATE/cluster.yaml] [--local]
    .venv/bin/python bench/bench_recovery.py --growth 2,4,8,16
    .venv/bin/python bench/bench_recovery.py --growth 2,4,8 --slurm [--repeats 3] [--ranks-per-node 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FAULTY = ROOT / "tests" / "jobs" / "faulty.py"
WARM_SCRIPT = ROOT / "tests" / "scripts" / "warm_imports.py"
ORCH = str(Path(sys.executable).with_name("orch"))
PARAMS = ["epochs=2", "fault=kill", "fault_rank=1", "fault_step=40", "fault_restart=0"]
SHAPE = ["--nodes", "2", "--gpus", "1", "--cpus-per-task", "1"]


def orch(*args: str) -> str:
    return subprocess.run([ORCH, *args], capture_output=True, text=True, check=True, timeout=600).stdout


def state(job_id: str, cluster: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(orch("status", job_id, "--json", "--cluster", cluster))
    return data


def wait(job_id: str, cluster: str, want: set[str], timeout: float = 900) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = state(job_id, cluster)
        if s["state"] in want:
            return s
        time.sleep(1)
    raise SystemExit(f"job {job_id} did not reach {want} in {timeout:.0f} s")


def attempts(job_dir: Path) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((job_dir / "attempts.json").read_text())
    return data


def nodes() -> list[str]:
    listed = subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True, check=True,
                            timeout=30).stdout.split()
    return sorted(set(listed), key=lambda name: (len(name), name))


def with_restart(cluster: str, restart: str, folder: str) -> str:
    """A copy of the cluster file with ``launcher.restart`` set."""
    import yaml

    data = yaml.safe_load(Path(cluster).read_text())
    data.setdefault("launcher", {})["restart"] = restart
    path = Path(folder) / f"cluster-{restart}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


LOCAL_CLUSTER = """name: bench
partitions:
  - {{name: cpu, nodes: 'node[1-2]', gpus_per_node: 0, cpus_per_node: 2, mem_per_node: 4G}}
launcher: {{init_timeout: 30, collective_timeout: 10, job_root: '{root}', restart: {restart}, max_restarts: 1}}
"""


def local(clean: str) -> None:
    """The orch run variants: orch's entrypoint and a script, each restarted by step and in-process."""
    print(f"{'orch run':<26} {'recovery_s':>10} {'lost':>5} {'restart imports_s':>17} {'survivor pid':>12}  params")
    with tempfile.TemporaryDirectory() as tmp:
        for restart in ("step", "in-process"):
            cluster = Path(tmp) / f"{restart}.yaml"
            cluster.write_text(LOCAL_CLUSTER.format(root=Path(tmp) / "jobs", restart=restart))
            out = subprocess.run([ORCH, "run", "--cluster", str(cluster), "--json", str(FAULTY), "--nproc", "2",
                                  *PARAMS], capture_output=True, text=True, check=True, timeout=600).stdout
            summary = json.loads(out)
            hist = attempts(Path(summary["job_dir"]))
            imports = summary["result"]["startup"].get("imports", float("nan"))
            kept = "kept" if hist[0]["pids"].get("0") == hist[1]["pids"].get("0") else "new"
            equal = "equal" if summary["result"]["param_digest"] == clean else "DIFFERENT"
            print(f"{'entrypoint, ' + restart:<26} {hist[0]['recovery_s']:>10.3f} {hist[0]['lost_steps']!s:>5} "
                  f"{imports:>17.3f} {kept:>12}  {equal}")
            out = subprocess.run([ORCH, "run", "--cluster", str(cluster), "--json", str(WARM_SCRIPT), "--nproc",
                                  "2"], capture_output=True, text=True, check=True, timeout=600).stdout
            job_dir = Path(json.loads(out)["job_dir"])
            lines = [json.loads(x) for x in (job_dir / "imports-rank1.jsonl").read_text().splitlines()]
            again = next(x for x in lines if x["restart"] == 1)
            print(f"{'script, ' + restart:<26} {'':>10} {'':>5} {again['imports_s']:>17.3f} {'new':>12}")


GROWTH_CLUSTER = """name: bench
partitions:
  - {{name: cpu, nodes: 'node1', gpus_per_node: 0, cpus_per_node: 2, mem_per_node: 4G}}
launcher: {{init_timeout: 300, collective_timeout: 30, job_root: '{root}', restart: {restart}, max_restarts: 1}}
"""
GROWTH_PATHS = (("entrypoint", "in-process"), ("entrypoint", "step"), ("script", "in-process"), ("script", "step"))
STEPS = 16  # training steps per epoch at every world size (2 epochs; rank 1 killed in the middle of epoch 2)
KILL = ["fault=kill", "fault_rank=1", f"fault_step={1 + STEPS + STEPS // 2}", "fault_restart=0"]


def run_local(cluster: Path, target: Path, world: int, *extra: str) -> dict[str, Any]:
    """``orch run --json`` of ``target`` on ``world`` local ranks (above orch run's limit of ranks per core: the same
    CLI with only that limit lifted, as bench_restart_growth.py does)."""
    from bench_restart_growth import LIFT_GUARD, guard

    command = [ORCH] if world <= guard() else [sys.executable, "-c", LIFT_GUARD]
    done = subprocess.run([*command, "run", "--cluster", str(cluster), "--json", str(target), "--nproc", str(world),
                           *extra], capture_output=True, text=True, timeout=600 + 60 * world)
    if done.returncode != 0:
        raise SystemExit(f"orch run {target.name} --nproc {world} exited {done.returncode}:\n{done.stderr[-3000:]}")
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary


def first_steps(job_dir: Path) -> float | None:
    """When the last rank finished its first training step (the ranks' outcome records), else None."""
    times = []
    for path in (job_dir / "logs").glob("rank*.outcome.json"):
        first = json.loads(path.read_text()).get("first_step")
        if not isinstance(first, (int, float)):
            return None
        times.append(float(first))
    return max(times, default=None)


def recovery_of(job_dir: Path, script: bool) -> float | None:
    """attempts.json's recovery_s (a script: the failure to the end of the restarted world)."""
    hist = attempts(job_dir)
    if script:
        failed, done = hist[0].get("failed_at"), hist[-1].get("ended") if len(hist) > 1 else None
        return None if failed is None or done is None else float(done) - float(failed)
    rec = hist[0].get("recovery_s")
    return float(rec) if isinstance(rec, (int, float)) else None


def growth(worlds: list[int]) -> None:
    """Every path at each world size under orch run on this machine, in one run: a table."""
    from bench_restart_growth import params

    rows = []
    with tempfile.TemporaryDirectory(prefix="orch-recovery-growth-") as tmp:
        clusters = {}
        for restart in ("step", "in-process"):
            clusters[restart] = Path(tmp) / f"{restart}.yaml"
            clusters[restart].write_text(GROWTH_CLUSTER.format(root=Path(tmp) / "jobs", restart=restart))
        for world in worlds:
            job = params(world, STEPS, 8)
            launched = time.time()
            summary = run_local(clusters["step"], FAULTY, world, *job, "--max-restarts", "0")
            last_first = first_steps(Path(summary["job_dir"]))
            startup = None if last_first is None else last_first - launched
            rendezvous = summary["result"].get("startup", {}).get("process_group")
            clean = summary["result"]["param_digest"]
            cells: list[float | None] = []
            equal = True
            for kind, restart in GROWTH_PATHS:
                script = kind == "script"
                summary = run_local(clusters[restart], WARM_SCRIPT if script else FAULTY, world,
                                    *([] if script else [*job, *KILL]))
                cells.append(recovery_of(Path(summary["job_dir"]), script))
                equal = equal and (script or summary["result"]["param_digest"] == clean)
                print(f"{world} ranks, {kind} {restart}: {cells[-1]}", file=sys.stderr, flush=True)
            rows.append((world, startup, rendezvous, cells, equal))
    print("orch run on this machine (CPU, gloo); seconds. start-up: launch to every rank's first step (rank 0's "
          "rendezvous); recovery: failure to the first step of the next attempt (a script: to its restarted world's "
          "end)")
    head = f"{'ranks':>5} {'start-up':>8} {'rendezvous':>10} " + " ".join(f"{k + ' ' + r:>21}" for k, r in GROWTH_PATHS)
    print(head + "  params")
    for world, startup, rendezvous, cells, equal in rows:
        line = f"{world:>5} {_cell(startup, 8)} {_cell(rendezvous, 10)} " + " ".join(_cell(c, 21) for c in cells)
        print(line + ("  equal" if equal else "  DIFFERENT"))


def _cell(value: Any, width: int) -> str:
    return f"{value:>{width}.2f}" if isinstance(value, (int, float)) else f"{'-':>{width}}"


def submit(cluster: str, restarts: int, *more: str) -> tuple[str, Path]:
    data = json.loads(orch("submit", str(FAULTY), "--cluster", cluster, "--json", *SHAPE,
                           "--max-restarts", str(restarts), *more, *PARAMS))
    return str(data["job_id"]), Path(data["job_dir"])


def follow(job_dir: Path, job_id: str, cluster: str) -> str:
    """The folder's job once it is over (a resubmitted job hands the folder to the next id)."""
    while True:
        done = wait(job_id, cluster, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"})
        time.sleep(2)  # the batch script records the next job right after its sbatch
        nxt = (job_dir / "job_id").read_text().strip()
        if nxt == job_id or done["state"] == "COMPLETED":
            return job_id
        job_id = nxt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = os.path.join(os.environ.get("ORCH_SLURM_STATE", "/tmp/orch-slurm"), "cluster.yaml")
    parser.add_argument("--cluster", default=default)
    parser.add_argument("--local", action="store_true", help="the orch run variants only (no Slurm)")
    parser.add_argument("--growth", help="world sizes (2,4,8,16): every path at each, under orch run")
    parser.add_argument("--slurm", action="store_true", help="with --growth: node counts on the Slurm cluster")
    parser.add_argument("--repeats", type=int, default=3, help="with --slurm: faulty runs a mode and node count")
    parser.add_argument("--ranks-per-node", type=int, default=1, help="with --slurm: ranks a node (--gpus)")
    args = parser.parse_args()
    if args.growth and args.slurm:
        from recovery_slurm import counts, run

        try:
            node_counts = counts(args.growth)
        except ValueError as exc:
            parser.error(str(exc))
        return run(args.cluster, node_counts, args.repeats, args.ranks_per_node)
    if args.growth:
        growth([int(w) for w in args.growth.split(",") if w.strip()])
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        clean = json.loads(subprocess.run(
            [ORCH, "run", str(FAULTY), "--nproc", "2", "--job-root", tmp, "--json", "--max-restarts", "0",
             "epochs=2"], capture_output=True, text=True, check=True, timeout=600).stdout)["result"]["param_digest"]
    if args.local:
        local(clean)
        return 0
    rows = []
    others = nodes()[2:]
    pinned = ["--exclude", ",".join(others)] if others else []
    with tempfile.TemporaryDirectory() as tmp:
        job_id, job_dir = submit(with_restart(args.cluster, "in-process", tmp), 1, *pinned)
        wait(job_id, args.cluster, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"})
        rows.append(("in-process", job_id, job_dir))
        by_step = with_restart(args.cluster, "step", tmp)  # the step-level paths (in-process is the default)
        job_id, job_dir = submit(by_step, 1, *pinned)
        wait(job_id, args.cluster, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"})
        rows.append(("in-job restart", job_id, job_dir))
        if others:
            job_id, job_dir = submit(by_step, 1)
            rows.append(("resubmit", follow(job_dir, job_id, args.cluster), job_dir))
    job_id, job_dir = submit(args.cluster, 0, *pinned)
    wait(job_id, args.cluster, {"FAILED"})
    subprocess.run(["scontrol", "requeue", job_id], check=True, timeout=30)
    wait(job_id, args.cluster, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"})
    rows.append(("requeue", job_id, job_dir))
    print(f"{'path':<16} {'job':>5} {'state':<10} {'recovery_s':>10} {'lost_steps':>10} {'goodput':>8}  params")
    recovery: dict[str, float] = {}
    for name, jid, folder in rows:
        hist = attempts(folder)
        result = json.loads((folder / "result.json").read_text()) if (folder / "result.json").exists() else {}
        rec = hist[0].get("recovery_s")
        recovery[name] = float(rec) if isinstance(rec, (int, float)) else float("nan")
        equal = "equal" if result.get("param_digest") == clean else "DIFFERENT"
        good = result.get("goodput", {}).get("goodput", float("nan"))
        print(f"{name:<16} {jid:>5} {state(jid, args.cluster)['state']:<10} {recovery[name]:>10.1f} "
              f"{hist[0].get('lost_steps')!s:>10} {good:>8.3f}  {equal}")
    for name in recovery:
        if name != "in-job restart" and recovery["in-job restart"]:
            print(f"{name} / in-job recovery: {recovery[name] / recovery['in-job restart']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
