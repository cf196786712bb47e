"""How long does a crash cost? In-job restart vs the requeue path. A benchmark, not a test.

On a running Slurm cluster (the local test cluster: ``tests/slurm/cluster.sh up``), the same job
(``tests/jobs/faulty.py``, 2 nodes x 1 task, CPU/gloo) in which rank 1 dies of SIGKILL in the middle of
epoch 2 (``fault=kill``, only in its first run: ``fault_restart=0``), recovered

* **in-job**: ``--max-restarts 1``: the batch script starts a new srun step in the same allocation, which
  resumes from the newest checkpoint;
* **requeue**: ``--max-restarts 0``: the job fails, then ``scontrol requeue`` puts it back in the queue
  (Slurm's own requeue path, with its begin-time delay), and the new run resumes from the checkpoint;
* **resubmit** (a cluster of three nodes or more): ``--max-restarts 1`` with a free node left: the blamed
  node has no spare, so the batch script submits the job again without it (``sbatch --exclude``) and the
  new job resumes from the checkpoint on another node.

The in-job and requeue runs exclude every node past the first two, so no node is free to move to.

Prints each path's recovery time (``attempts.json``: from the failure to the first training step of the
next attempt), their ratio, the lost steps, and whether the final parameters equal an uninterrupted
run's (``orch run`` of the same job without the fault, same world size).

    .venv/bin/python bench/bench_recovery.py [--cluster $ORCH_SLURM_STATE/cluster.yaml]
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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        clean = json.loads(subprocess.run(
            [ORCH, "run", str(FAULTY), "--nproc", "2", "--job-root", tmp, "--json", "--max-restarts", "0",
             "epochs=2"], capture_output=True, text=True, check=True, timeout=600).stdout)["result"]["param_digest"]
    rows = []
    others = nodes()[2:]
    pinned = ["--exclude", ",".join(others)] if others else []
    job_id, job_dir = submit(args.cluster, 1, *pinned)
    wait(job_id, args.cluster, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"})
    rows.append(("in-job restart", job_id, job_dir))
    if others:
        job_id, job_dir = submit(args.cluster, 1)
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
