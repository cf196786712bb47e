"""How long does a hang cost a script, by launch style? A benchmark, not a test.

Each hang of tests/scripts/hang_*.py (a blocked data loader, a barrier only rank 0 calls, mismatched
collectives, an endless loop, a rank blocked in native code, a Lightning and an HF ``Trainer`` script) runs under
``orch run SCRIPT --nproc 2 --collective-timeout 5 --max-restarts 0`` (gloo on CPU) in each launch style orch
starts scripts in (``--launch``):

* **env**: the script as it is (torchrun's variables);
* **local-rank-arg**: the same script, started as ``torch.distributed.launch`` did (``--local-rank=N``);
* **slurm**: a copy whose ``init_process_group`` takes its rank and world size from ``SLURM_PROCID`` and
  ``SLURM_NTASKS`` (the same lines otherwise);
* **per-node**: a script that spawns its own ranks (``torch.multiprocessing.spawn``) and runs the hang script in
  each (orch starts one process; ``--per-node``: the loader and the loop only, the others are alike).

A rank that ignores SIGTERM at C level and blocks in native code (``hang_unanswered.py``) is named only where
py-spy is installed (``orch[stacks]``: records/pyspy.py). The frameworks' scripts run in the env style only (their
strategies launch that way). The scripts print
``rank R hung at <time>`` when they hang. Printed for each run: the rank named and its file:line (from
``logs/places.json``), the time from the hang to the rank named (``places.json`` written) and to the end of
``orch run``.

    .venv/bin/python bench/bench_hangs.py [--styles env,slurm] [--cases loader,spin] [--per-node]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "scripts"
ORCH = str(Path(sys.executable).with_name("orch"))
TIMEOUT_S = 5
CAP_S = 180  # a run that does not end by then: printed as such

# case -> (script, extra options, the package it needs)
CASES = {
    "loader": ("hang_loader.py", (), None),
    "barrier": ("hang_barrier.py", ("--no-check",), None),
    "mismatch": ("hang_mismatch.py", (), None),
    "spin": ("hang_spin.py", (), None),
    "native": ("hang_native.py", (), None),
    "unanswered": ("hang_unanswered.py", (), None),  # read by py-spy, when installed (records/pyspy.py)
    "lightning": ("hang_lightning.py", (), "lightning"),
    "hf-trainer": ("hang_hf_trainer.py", (), "transformers"),
}
FRAMEWORKS = frozenset({"lightning", "hf-trainer"})
STYLES = ("env", "local-rank-arg", "slurm", "per-node")
PER_NODE_CASES = ("loader", "spin")
SLURM_INIT = ('dist.init_process_group("gloo", rank=int(__import__("os").environ["SLURM_PROCID"]), '
              'world_size=int(__import__("os").environ["SLURM_NTASKS"]))')
PER_NODE = '''"""Spawns its own ranks, as a per-node script does, and runs a hang script in each."""
import os
import runpy
import sys

import torch.multiprocessing as mp


def rank_main(index, script, nproc):
    os.environ.update(RANK=str(index), LOCAL_RANK=str(index), WORLD_SIZE=str(nproc))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    nproc = int(os.environ.get("NPROC_PER_NODE") or os.environ.get("LOCAL_WORLD_SIZE") or 2)
    mp.spawn(rank_main, nprocs=nproc, args=(sys.argv[1], nproc))
'''
CULPRIT = re.compile(r"^rank (\d+) (?:stopped|was in \S+|had) (?:at (\S+:\d+))?")


def variant(case: str, style: str, folder: Path) -> tuple[Path, tuple[str, ...]]:
    """The script this style runs, and the arguments after it."""
    script = SCRIPTS / CASES[case][0]
    if style == "slurm":
        copy = folder / script.name
        text = script.read_text(encoding="utf-8")
        assert 'dist.init_process_group("gloo")' in text, script
        copy.write_text(text.replace('dist.init_process_group("gloo")', SLURM_INIT), encoding="utf-8")
        return copy, ()
    if style == "per-node":
        spawner = folder / f"spawn_{script.name}"
        spawner.write_text(PER_NODE, encoding="utf-8")
        return spawner, (str(script),)
    return script, ()


def hung_at(job_dir: Path) -> float | None:
    times = [float(t) for log in (job_dir / "logs").glob("*.out")
             for t in re.findall(r"rank \d hung at ([0-9.]+)", log.read_text(errors="replace"))]
    return min(times, default=None)


def run(case: str, style: str, work: Path) -> dict[str, object]:
    folder = work / f"{case}-{style}"
    folder.mkdir()
    script, args = variant(case, style, folder)
    jobs = folder / "jobs"
    argv = [ORCH, "run", str(script), "--nproc", "2", "--job-root", str(jobs), "--collective-timeout",
            str(TIMEOUT_S), "--max-restarts", "0", "--launch", style, *CASES[case][1]]
    if args:
        argv += ["--", *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "RANK", "LOCAL_RANK", "WORLD_SIZE"))}
    env["PYTHONPATH"] = str(SCRIPTS)
    try:
        proc = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=CAP_S, check=False)
        ended: float | None = time.time()
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        ended, code = None, None
    dirs = [p for p in jobs.iterdir() if (p / "job.json").is_file()] if jobs.is_dir() else []
    row: dict[str, object] = {"case": case, "style": style, "exit": code, "named": None, "to_named": None,
                              "to_end": None}
    if not dirs:
        return row
    hung = hung_at(dirs[0])
    places = dirs[0] / "logs" / "places.json"
    if places.is_file():
        culprit = json.loads(places.read_text())["culprit"] or ""
        found = CULPRIT.match(culprit)
        row["named"] = f"rank {found[1]}, {found[2] or '-'}" if found else culprit[:50]
        if hung is not None and culprit:
            row["to_named"] = places.stat().st_mtime - hung
    if hung is not None and ended is not None:
        row["to_end"] = ended - hung
    return row


def _secs(value: object) -> str:
    return f"{value:.1f} s" if isinstance(value, float) else "-"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--styles", default=",".join(STYLES[:3]))
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--per-node", action="store_true", help=f"also the per-node style ({PER_NODE_CASES})")
    args = parser.parse_args(argv)
    styles = args.styles.split(",") + (["per-node"] if args.per_node else [])
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-hangs-") as tmp:
        for style in styles:
            for case in args.cases.split(","):
                if (style != "env" and case in FRAMEWORKS) or (style == "per-node" and case not in PER_NODE_CASES):
                    continue
                need = CASES[case][2]
                if need is not None and importlib.util.find_spec(need) is None:
                    print(f"{case}: {need} is not installed, skipped", file=sys.stderr)
                    continue
                row = run(case, style, Path(tmp))
                rows.append(row)
                print(row, file=sys.stderr, flush=True)
    print("| style | case | named | hang -> named | hang -> end | exit |\n| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print(f"| {row['style']} | {row['case']} | {row['named'] or '(not named)'} | {_secs(row['to_named'])} | "
              f"{_secs(row['to_end'])} | {row['exit']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
