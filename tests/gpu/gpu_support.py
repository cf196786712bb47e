"""Helpers for the GPU checks (tests/gpu): what this machine has, running the real CLI, reading job folders,
and who holds a CUDA context where (nvidia-smi).

Every ``gpu`` test is skipped, with the reason, when ``torch.cuda.is_available()`` is false. For checking the
harness itself on a machine without one, ``ORCH_GPU_CPU_DRYRUN=1`` runs the same tests on 2 CPU ranks (gloo):
plumbing only (scripts, records, figures, the report); the CUDA-only parts still skip, and no figure of such a
run says anything about a GPU.

The pytest process itself never creates a CUDA context (``is_available`` and ``device_count`` do not), so any
context nvidia-smi lists for a process of a run belongs to orch or to the script it runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from support import ORCH, ROOT, clean_environ

from jobs._datasets import MNIST_FILES

GPU_DIR = Path(__file__).resolve().parent
SCRIPTS = GPU_DIR / "scripts"
DRYRUN_ENV = "ORCH_GPU_CPU_DRYRUN"

CUDA = torch.cuda.is_available()
DRYRUN = not CUDA and os.environ.get(DRYRUN_ENV) == "1"
NO_CUDA = ("no CUDA device (torch.cuda.is_available() is false): nothing to check here; on a GPU machine run "
           "bash scripts/gpu-check.sh (docs/testing.md, GPU checks)")
DRYRUN_NOTE = f"{DRYRUN_ENV}=1 on a machine without CUDA: CPU ranks (gloo), so this CUDA-only part cannot run"

# Every gpu test module: pytestmark = [pytest.mark.gpu, requires_cuda]
requires_cuda = pytest.mark.skipif(not CUDA and not DRYRUN, reason=NO_CUDA)

BACKEND = "nccl" if CUDA else "gloo"
DEVICE_TYPE = "cuda" if CUDA else "cpu"
RUN_TIMEOUT = 200  # seconds per orch run (scripts/gpu-check.sh gives the whole suite under 5 minutes)

DATA_DIR = Path(os.environ.get("ORCH_DATA_DIR") or ROOT.parent / "shared" / "data")
HAVE_MNIST = all((DATA_DIR / "MNIST" / "raw" / f"{n}.gz").is_file() or (DATA_DIR / "MNIST" / "raw" / n).is_file()
                 for n in MNIST_FILES.values())
NO_MNIST = f"MNIST files not found under {DATA_DIR}/MNIST/raw (set ORCH_DATA_DIR to the folder holding MNIST/)"


def gpu_count() -> int:
    """The GPUs this process sees (CUDA_VISIBLE_DEVICES honoured); 0 without CUDA."""
    return torch.cuda.device_count() if CUDA else 0


def nproc() -> int:
    """Ranks per run: one per visible GPU. Two ranks on one GPU are not a valid NCCL job (NCCL refuses a
    communicator with the same device twice, and orch's built-in entrypoint stops before that: "ranks would
    share a GPU"), so a one-GPU machine runs 1 rank. The CPU dry run uses 2 ranks."""
    return gpu_count() if CUDA else 2


def run_env(**extra: str) -> dict[str, str]:
    """A clean environment for ``orch run`` (no Slurm, torchrun or ORCH_ variables) that keeps the GPUs this
    process was given: clean_environ drops CUDA_VISIBLE_DEVICES, and the ranks must see what we counted."""
    env = clean_environ(**extra)
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
    return env


def orch_command(*args: str) -> list[str]:
    return [ORCH, "run", *args]


def run_orch(cwd: Path, *args: str, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(orch_command(*args), cwd=cwd, env=run_env(), capture_output=True, text=True,
                          timeout=timeout, check=False)


def job_dir(root: Path) -> Path:
    [found] = [p for p in root.iterdir() if (p / "job.json").is_file()]
    return found


def rank_logs(root: Path) -> str:
    """Every rank's log of the run under ``root`` (for failure messages)."""
    parts = []
    for log in sorted(root.glob("*/logs/*.out")):
        parts.append(f"--- {log.name}\n{log.read_text(encoding='utf-8', errors='replace')[-3000:]}")
    return "\n".join(parts)


def explain(proc: subprocess.CompletedProcess[str] | None, root: Path) -> str:
    out = "" if proc is None else f"exit {proc.returncode}\nstderr:\n{proc.stderr[-3000:]}\n"
    return out + rank_logs(root)


def rank_records(out: Path, n: int) -> list[dict[str, Any]]:
    return [json.loads((out / f"rank{r}.json").read_text(encoding="utf-8")) for r in range(n)]


def last_metrics(folder: Path) -> dict[str, Any]:
    """The last line of the job folder's metrics.jsonl (one line per epoch)."""
    lines = [line for line in (folder / "metrics.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    assert lines, f"{folder / 'metrics.jsonl'} is empty"
    return dict(json.loads(lines[-1]))


# -- who holds a CUDA context where ---------------------------------------------------------------------------
def normalize_uuid(uuid: str) -> str:
    """nvidia-smi says ``GPU-8f2c...``, torch's ``device properties.uuid`` ``8f2c...``."""
    uuid = uuid.strip().lower()
    return uuid[len("gpu-"):] if uuid.startswith("gpu-") else uuid


def parse_compute_apps(text: str) -> list[tuple[int, str]]:
    """``nvidia-smi --query-compute-apps=pid,gpu_uuid --format=csv,noheader`` -> ``[(pid, uuid)]``."""
    apps = []
    for line in text.splitlines():
        pid, _, uuid = (part.strip() for part in line.partition(","))
        if pid.isdigit() and uuid:
            apps.append((int(pid), normalize_uuid(uuid)))
    return apps


def compute_apps() -> list[tuple[int, str]] | None:
    """The processes holding a CUDA context and their GPU, from nvidia-smi; None when it cannot say."""
    if shutil.which("nvidia-smi") is None:
        return None
    proc = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,gpu_uuid", "--format=csv,noheader"],
                          capture_output=True, text=True, timeout=30, check=False)
    return parse_compute_apps(proc.stdout) if proc.returncode == 0 else None


def descendants(root: int, proc_dir: Path = Path("/proc")) -> set[int]:
    """``root`` and every process below it (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def context_problems(apps: Iterable[tuple[int, str]], ours: set[int], own_gpu: Mapping[int, str]) -> list[str]:
    """What is wrong with the CUDA contexts of one run: ``apps`` as nvidia-smi lists them, ``ours`` the run's
    processes, ``own_gpu`` each rank's pid -> the uuid of its GPU. Every rank must hold exactly one context,
    on its own GPU, and no other process of the run (orch's launcher, a helper) may hold any. The classic
    bug, ``torch.cuda`` touched before ``set_device``, shows as every rank also holding one on GPU 0."""
    problems = []
    seen: dict[int, list[str]] = {}
    for pid, uuid in apps:
        if pid in ours:
            seen.setdefault(pid, []).append(normalize_uuid(uuid))
    for pid, uuids in sorted(seen.items()):
        if pid not in own_gpu:
            problems.append(f"process {pid} of the run is no rank but holds a CUDA context on GPU {', '.join(uuids)}")
            continue
        foreign = sorted(u for u in uuids if u != normalize_uuid(own_gpu[pid]))
        if foreign:
            problems.append(f"rank process {pid} (GPU {normalize_uuid(own_gpu[pid])}) also holds a CUDA context "
                            f"on GPU {', '.join(foreign)}")
    for pid, uuid in sorted(own_gpu.items()):
        if normalize_uuid(uuid) not in seen.get(pid, []):
            problems.append(f"rank process {pid} holds no CUDA context on its GPU {normalize_uuid(uuid)}")
    return problems


def wait_for(paths: list[Path], proc: subprocess.Popen[str], timeout: float) -> bool:
    """True once every path exists; False when ``proc`` ends first or the time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(p.exists() for p in paths):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.2)
    return False


@dataclass(frozen=True)
class Held:
    """A run whose ranks held their GPUs until released: how it ended, and what nvidia-smi saw meanwhile."""

    done: subprocess.CompletedProcess[str]
    ready: bool  # every rank wrote its record before the run ended or the time ran out
    apps: list[tuple[int, str]] | None  # nvidia-smi's (pid, gpu uuid) while they held them
    ours: set[int]  # the run's processes at that moment


def hold_and_release(argv: list[str], cwd: Path, out: Path, n: int) -> Held:
    """Start ``argv`` (an ``orch run`` of a script that writes ``out/rank<R>.json`` and then holds its GPU until
    ``out/release`` exists), read nvidia-smi while every rank holds its GPU, then release them."""
    with subprocess.Popen(argv, cwd=cwd, env=run_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:
        try:
            ready = wait_for([out / f"rank{r}.json" for r in range(n)], proc, timeout=RUN_TIMEOUT / 2)
            apps = compute_apps() if ready else None
            ours = descendants(proc.pid) if ready else set()
        finally:
            (out / "release").touch()
            try:
                stdout, stderr = proc.communicate(timeout=RUN_TIMEOUT / 2)
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, stderr = proc.communicate()
    return Held(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), ready, apps, ours)
