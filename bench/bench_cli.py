"""How fast is the orch CLI? Prints a table (a benchmark, not a test).

Every row runs a fresh interpreter (``subprocess``). The rows are run in turn, round after round
(alternated, so a burst of load on the machine hits every row alike), after two warm-up rounds
(``.pyc`` files and the template cache exist, as on any machine after the first run). Columns: the
median wall time, the fastest run, the median CPU time (user + system) of the child, which other
load disturbs much less than wall time, and the ratio to ``python -c pass`` (the floor).

* ``python -c pass``: the interpreter's own start-up;
* ``orch submit mnist --nodes 2 --gpus 8 --dry-run`` (target: 0.12 s on a quiet machine, and at most
  0.5x TorchX's dry run measured in the same run);
* the same with 1024 nodes x 8 GPUs = 8,192 ranks, text and ``--json`` (target < 0.3 s), on a
  cluster.yaml with a 1024-node partition;
* ``orch status`` and ``orch list`` with 1,000 job folders in the job root (Slurm's ``squeue``,
  ``sacct`` and ``scontrol`` replaced by stubs that answer nothing: the rows time orch's own work,
  plus one ``/bin/sh`` start per query);
* TorchX's ``torchx run --dryrun -s slurm dist.ddp -j 2x8 --script train.py`` (it runs ``sinfo`` once,
  with this shell's ``SLURM_CONF``) and the ratio orch/TorchX,
  when a ``torchx`` executable is given (``--torchx PATH`` or ``$ORCH_BENCH_TORCHX``) or on PATH.
  Install it in a venv of its own, never in orch's: ``python3 -m venv /tmp/torchx-venv &&
  /tmp/torchx-venv/bin/pip install torchx``.

``--profile`` adds the slowest imports of the 2x8 dry run (``python -X importtime``).
PYTHONDONTWRITEBYTECODE is removed from the children's environment: without .pyc files every run
would compile orch's modules again, which no user sees. The children use a template cache in a
temporary folder (``ORCH_CACHE_DIR``), filled by the warm-up rounds.

``--compare DIR`` adds the dry-run rows of another checkout (e.g. the code before a change).

    .venv/bin/python bench/bench_cli.py [--runs 21] [--torchx /tmp/torchx-venv/bin/torchx] [--compare DIR]
        [--profile]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
ORCH = str(Path(sys.executable).parent / "orch")
TORCHX_ENV_VAR = "ORCH_BENCH_TORCHX"
JOB_FOLDERS = 1000

BIG_CLUSTER = """\
name: bench
partitions:
  - name: big
    nodes: node[0001-1024]
    gpus_per_node: 8
    cpus_per_node: 96
    mem_per_node: 1000G
    max_time: 2-00:00:00
    gpu_type: h100
defaults:
  partition: big
env:
  NCCL_DEBUG: WARN
launcher:
  job_root: {job_root}
"""

TRAIN_PY = "print('train')\n"  # TorchX's dry run only names the script


@dataclass
class Row:
    label: str
    argv: list[str]
    target: float | None = None
    cwd: Path = ROOT
    env: dict[str, str] = field(default_factory=dict)  # on top of the common environment
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)


def run_once(row: Row, env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(row.argv, env={**env, **row.env}, cwd=row.cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def measure(rows: list[Row], env: dict[str, str], runs: int) -> None:
    """Two warm-up rounds, then ``runs`` rounds; each round runs every row once, in turn."""
    for _ in range(2):
        for row in rows:
            try:
                run_once(row, env)
            except subprocess.CalledProcessError as exc:
                raise SystemExit(f"{row.label}: {' '.join(row.argv)} failed (exit {exc.returncode})") from None
    for _ in range(runs):
        for row in rows:
            wall, cpu = run_once(row, env)
            row.walls.append(wall)
            row.cpus.append(cpu)


def make_job_root(root: Path, count: int) -> None:
    """``count`` job folders as ``orch submit`` writes them (the first one planned for real, the
    others copies with their own folder name and job id)."""
    from orchestrator.records.jobcreate import write_job_dir
    from orchestrator.service.plan import new_plan
    from orchestrator.slurm.plan import make_request
    from orchestrator.spec.clusterparse import parse_cluster
    from orchestrator.spec.job import load_job
    from orchestrator.spec.runconfig import JOB_ID_FILE

    cluster = parse_cluster((ROOT / "cluster.yaml").read_text(encoding="utf-8"))
    plan = new_plan(make_request({"job": "mnist", "nodes": 2, "gpus": 8}), cluster,
                    load_job("mnist", {}, ROOT), ROOT)
    first = write_job_dir(root / "template", plan.script, plan.run_config)
    for index in range(count):
        folder = root / f"mnist-20260101-{index // 3600:02d}{index // 60 % 60:02d}{index % 60:02d}-{index:06x}"
        shutil.copytree(first, folder)
        (folder / JOB_ID_FILE).write_text(f"{700000 + index}\n", encoding="utf-8")
    shutil.rmtree(first)


def find_torchx(given: str | None) -> tuple[str | None, str]:
    """The torchx executable and, when there is none, why."""
    candidate = given or os.environ.get(TORCHX_ENV_VAR) or shutil.which("torchx")
    if not candidate:
        return None, (f"no torchx: pass --torchx PATH or set {TORCHX_ENV_VAR} (pip install torchx into a "
                      "separate venv)")
    if not os.access(candidate, os.X_OK):
        return None, f"{candidate} is not executable"
    return candidate, ""


def profile(argv: list[str], env: dict[str, str], top: int = 15) -> str:
    proc = subprocess.run([PYTHON, "-X", "importtime", *argv], env=env, cwd=ROOT, capture_output=True,
                          text=True, check=True)
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        self_us, cumulative_us, name = (part.strip() for part in line[len("import time:"):].split("|"))
        rows.append((int(cumulative_us), int(self_us), name))
    rows.sort(reverse=True)
    lines = [f"{'cumulative':>10}  {'self':>8}  module"]
    lines += [f"{c / 1000:8.1f}ms  {s / 1000:6.1f}ms  {n}" for c, s, n in rows[:top]]
    return "\n".join(lines)


def table(rows: list[Row], torchx_row: Row | None, orch_2x8: Row) -> str:
    floor = statistics.median(rows[0].walls)
    width = max(len(row.label) for row in rows)
    out = [f"{'command':<{width}}  {'wall':>7}  {'(min)':>7}  {'cpu':>7}  {'x pass':>6}  {'target':>7}  result"]
    for row in rows:
        wall = statistics.median(row.walls)
        target = "" if row.target is None else f"{row.target:.2f}s"
        verdict = "" if row.target is None else ("ok" if wall < row.target else "over")
        out.append(f"{row.label:<{width}}  {wall:6.3f}s  {min(row.walls):6.3f}s  {statistics.median(row.cpus):6.3f}s"
                   f"  {wall / floor:5.1f}x  {target:>7}  {verdict}")
    if torchx_row is not None:
        ratio = statistics.median(orch_2x8.walls) / statistics.median(torchx_row.walls)
        cpu_ratio = statistics.median(orch_2x8.cpus) / statistics.median(torchx_row.cpus)
        out.append(f"orch 2x8 dry run / TorchX 2x8 dry run: {ratio:.2f}x wall, {cpu_ratio:.2f}x cpu "
                   f"(target <= 0.50x: {'ok' if ratio <= 0.5 else 'over'})")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="rounds (each row's median is over these)")
    parser.add_argument("--torchx", metavar="PATH", help=f"the torchx executable (default: ${TORCHX_ENV_VAR}, "
                        "else torchx on PATH)")
    parser.add_argument("--profile", action="store_true", help="also show the slowest imports of the 2x8 dry run")
    parser.add_argument("--compare", metavar="DIR", help="also time the dry runs of another orch checkout (its "
                        "repository root, e.g. from 'git archive OLD | tar -x -C DIR'), in the same rounds")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="orch-bench-") as tmp_name:
        tmp = Path(tmp_name)
        bin_dir = tmp / "bin"  # Slurm's clients answering nothing: orch's own work only
        bin_dir.mkdir()
        for tool in ("squeue", "sacct", "scontrol", "sbatch"):
            (bin_dir / tool).write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
            (bin_dir / tool).chmod(0o755)
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONDONTWRITEBYTECODE", "SLURM_CONF") and not k.startswith("ORCH_")}
        env.update(ORCH_CACHE_DIR=str(tmp / "cache"), PATH=f"{bin_dir}:/usr/bin:/bin")
        big = tmp / "cluster.yaml"
        big.write_text(BIG_CLUSTER.format(job_root=tmp / "jobs"), encoding="utf-8")
        make_job_root(tmp / "jobs", JOB_FOLDERS)
        shipped = str(ROOT / "cluster.yaml")
        dry_2x8 = ["submit", "mnist", "--nodes", "2", "--gpus", "8", "--dry-run", "--cluster", shipped]
        dry_big = ["submit", "mnist", "--nodes", "1024", "--gpus", "8", "--dry-run", "--cluster", str(big)]
        orch_2x8 = Row("orch submit mnist --nodes 2 --gpus 8 --dry-run", [ORCH, *dry_2x8], 0.12)
        rows = [
            Row("python -c pass (interpreter start-up)", [PYTHON, "-c", "pass"]),
            orch_2x8,
            Row("  the same, --json (2x8)", [ORCH, *dry_2x8, "--json"], 0.12),
            Row("orch submit mnist --nodes 1024 --gpus 8 --dry-run", [ORCH, *dry_big], 0.3),
            Row("  the same, --json (1024x8)", [ORCH, *dry_big, "--json"], 0.3),
            Row(f"orch status ({JOB_FOLDERS} job folders, stub Slurm)", [ORCH, "status", "--cluster", str(big)]),
            Row(f"orch list ({JOB_FOLDERS} job folders, stub Slurm)", [ORCH, "list", "--cluster", str(big)]),
        ]
        if args.compare:
            checkout = Path(args.compare).resolve()  # run from its root: its own jobs/ come first
            other = {"PYTHONPATH": str(checkout)}
            its_own = [*dry_2x8[:-1], str(checkout / "cluster.yaml")]  # its cluster.yaml
            rows += [Row(f"[{checkout.name}] orch submit mnist --nodes 2 --gpus 8 --dry-run",
                         [ORCH, *its_own], cwd=checkout, env=other),
                     Row(f"[{checkout.name}] orch submit mnist --nodes 1024 --gpus 8 --dry-run",
                         [ORCH, *dry_big], cwd=checkout, env=other)]
        torchx, why_not = find_torchx(args.torchx)
        torchx_row = None
        if torchx is not None:
            work = tmp / "torchx"
            work.mkdir()
            (work / "train.py").write_text(TRAIN_PY, encoding="utf-8")
            torchx_row = Row("torchx run --dryrun -s slurm dist.ddp -j 2x8 --script train.py",
                             [torchx, "run", "--dryrun", "-s", "slurm", "dist.ddp", "-j", "2x8",
                              "--script", "train.py"], cwd=work,
                             env={"SLURM_CONF": os.environ["SLURM_CONF"]} if "SLURM_CONF" in os.environ else {})
            rows.append(torchx_row)
        measure(rows, env, args.runs)

        print(f"orch CLI speed: median of {args.runs} alternated rounds, fresh interpreters, "
              f"{os.cpu_count()} CPUs, python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.1f}")
        print(table(rows, torchx_row, orch_2x8))
        if torchx_row is None:
            print(f"TorchX row skipped: {why_not}")
        else:
            conf = os.environ.get("SLURM_CONF")
            where = f"SLURM_CONF={conf}" if conf else "SLURM_CONF unset: sinfo fails fast"
            print(f"TorchX's dry run runs sinfo once ({where}); orch's dry run starts no process")
        print("wall = median wall time, (min) = fastest run, cpu = median user+system CPU time of the child, "
              "x pass = wall / python -c pass; other work on the machine inflates wall times")
        if args.profile:
            print("\nslowest imports of the 2x8 dry run (python -X importtime, one run):")
            print(profile(["-m", "orchestrator.cli", *dry_2x8], env))
        summary = {row.label: {"wall_s": round(statistics.median(row.walls), 4),
                               "cpu_s": round(statistics.median(row.cpus), 4)} for row in rows}
        print("\n" + json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
