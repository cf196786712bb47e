"""How do ``orch list`` / ``orch status`` scale with the number of jobs? Prints a table (a benchmark,
not a test; tests/slurm/test_client_batches.py and tests/commands/test_list_jobs_many.py assert the results,
never the times).

For each size N it builds a job root of N folders (a job.json and a job_id each, names stamped as
``orch submit`` names them) and stand-in ``squeue``/``sacct``/``scontrol`` first on PATH that answer
every id they are asked about, then times, in a fresh interpreter each:

* ``orch list`` (the default ``--limit``: reads only the newest folders);
* ``orch list --limit 0 --json`` (every folder, every id asked of Slurm in batches);
* ``orch status <the oldest job id>`` (found by reading only job_id files);

and reports the number of Slurm calls and the longest command line any of them got (bytes).

    .venv/bin/python bench/bench_many_jobs.py [--sizes 1000,10000,100000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORCH = Path(sys.executable).with_name("orch")

STAND_IN = """\
import json, os, sys
args = sys.argv[1:]
ids = [i for a in args if a.startswith("--jobs=") for i in a[7:].split(",") if i]
with open(os.environ["BENCH_SLURM_LOG"], "a") as fh:
    fh.write(json.dumps([os.path.basename(sys.argv[0]), sum(len(a) + 1 for a in sys.argv)]) + "\\n")
if sys.argv[0].endswith("squeue"):
    sys.stdout.write("".join(f"{i}|RUNNING|None|n1|1:00|0|N/A|bench\\n" for i in ids if int(i) % 2 == 0))
elif sys.argv[0].endswith("sacct"):
    sys.stdout.write("".join(f"{i}|COMPLETED|0:0|n1|00:01:00|60|cpu=1|N/A|bench\\n" for i in ids))
"""


def build(root: Path, count: int) -> None:
    sys.path.insert(0, str(HERE.parent))
    from orchestrator.spec.runconfig import RunConfig, run_config_text

    template = run_config_text(RunConfig(
        mode="slurm", job_name="bench", job_file="/jobs/x.py", params={}, nodes=1, gpus_per_node=1,
        tasks_per_node=1, cpus_per_task=1, job_dir="@DIR@", created="2026-02-01T00:00:00"))
    root.mkdir(parents=True)
    for i in range(count):
        day, rest = divmod(i, 86_400)
        folder = root / f"bench-2026{1 + day // 28:02d}{1 + day % 28:02d}-{rest // 3600:02d}{rest % 3600 // 60:02d}" \
                        f"{rest % 60:02d}-{i:06x}"
        folder.mkdir()
        (folder / "job.json").write_text(template.replace("@DIR@", str(folder)))
        (folder / "job_id").write_text(f"{100_000 + i}\n")


def timed(argv: list[str], env: dict[str, str], cwd: Path, log: Path, runs: int) -> tuple[float, int, int]:
    times = []
    for _ in range(runs):
        log.unlink(missing_ok=True)
        started = time.perf_counter()
        proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - started)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr}")
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return statistics.median(times), len(calls), max((c[1] for c in calls), default=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{'folders':>8} | {'command':<34} | {'median s':>8} | {'Slurm calls':>11} | {'longest argv':>12}")
    print("-" * 86)
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="orch-bench-jobs-") as tmp:
            base = Path(tmp)
            build(base / "jobs", size)
            bin_dir = base / "bin"
            bin_dir.mkdir()
            for name in ("squeue", "sacct", "scontrol", "scancel"):
                (bin_dir / name).write_text(f"#!{sys.executable}\n{STAND_IN}")
                (bin_dir / name).chmod(0o755)
            (base / "cluster.yaml").write_text(
                "name: b\npartitions:\n  - {name: p, nodes: 'n[1-2]', gpus_per_node: 1, cpus_per_node: 2, "
                f"mem_per_node: 1000}}\nlauncher:\n  job_root: {base / 'jobs'}\n")
            log = base / "calls.jsonl"
            env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "BENCH_SLURM_LOG": str(log),
                   "ORCH_STATE_DIR": str(base / "state")}
            rows = [("orch list", [str(ORCH), "list"]),
                    ("orch list --limit 0 --json", [str(ORCH), "list", "--limit", "0", "--json"]),
                    ("orch status <oldest id>", [str(ORCH), "status", "100000", "--json"])]
            for label, argv in rows:
                median, calls, longest = timed(argv, env, base, log, args.runs)
                print(f"{size:>8} | {label:<34} | {median:>8.2f} | {calls:>11} | {longest:>12}")


if __name__ == "__main__":
    main()
