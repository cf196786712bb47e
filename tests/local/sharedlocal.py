"""Real local runs that several test modules only read, each made once per test session (tests/sharedruns.py) by
whichever module and pytest-xdist worker asks first; a test that changes a run's folder copies it first
(``sharedruns.copy_job``). Import it as ``from local import sharedlocal`` (tests/ is on the path).

* ``faulty_reference``: tests/jobs/faulty.py on 2 ranks, 2 epochs, 1001 samples (the sampler pads one),
  ``check_sync``, uninterrupted and without restarts (max_restarts 0: no agent): the parameters every resumed,
  preempted, killed or restarted run of that job must end with (tests/local/test_runner.py,
  tests/restarts/test_agent.py).
* ``faulty_preempted``: the same job, rank 1 alone sending itself the preemption signal at its step 40 (in epoch 2):
  both ranks stop at one step and leave a mid-epoch checkpoint (tests/local/test_runner.py resumes a copy).
* ``faulty_failure``: the same job with one fault (``fault``, ``fault_rank``, ``fault_step``: tests/jobs/faulty.py)
  under ``orch run --json``, checkpoints written on the training thread (launcher.checkpoint_write: sync: a fault in
  epoch 2 comes after epoch 1's checkpoint is on disk, however loaded the machine): what orch run said, how long it
  took, and the processes naming the job folder still alive the moment it ended (tests/local/test_runner.py,
  test_runner_dying_ranks.py, test_runner_errors_once.py read the same failures).
* ``ddp_train``: tests/scripts/ddp_train.py, unmodified, under ``orch run --nproc 2 --cpu --json`` from another
  directory than the script's, by a relative path, with arguments no shell may change: every rank's record
  (tests/local/test_runner_script.py), one formed world (tests/task/test_worldcheck_runs.py), and the final
  parameters of an uninterrupted run of it (tests/restarts/test_agent.py, test_agent_script_nodes.py: their
  restarted worlds train ``DDP_STEPS``).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import sharedruns
from support import ORCH, ROOT, TESTS, clean_environ

FAULTY = TESTS / "jobs" / "faulty.py"
INIT_TIMEOUT = 10  # launcher.init_timeout: rendezvous, start-up, checkpoints
COLLECTIVE_TIMEOUT = 5  # launcher.collective_timeout: the wait for a stuck collective while training
FAULTY_PARAMS = ["epochs=2", "samples=1001", "check_sync=true"]  # 32 steps per epoch on 2 ranks
FAILURE_TIMEOUT = 215  # a failed run that has not ended by then hangs (test_runner_dying_ranks: 180 + 10 + 25)

SCRIPTS = ROOT / "tests" / "scripts"
DDP = SCRIPTS / "ddp_train.py"
DDP_STEPS = ["--steps", "4", "--lr", "0.05"]  # the training arguments of the shared ddp_train run
# Arguments no shell or quoting layer may change: they must reach sys.argv byte for byte.
HOSTILE: list[str] = [
    "with space", "it's", 'say "hi"', "$(touch /tmp/orch-pwned)", "`id`", "a;b", "*", "~root", "--out",
    "-x", "", " ", "tab\there", "new\nline", "back\\slash", "%j %t", "unicode ✓", "#hash", "--",
    os.fsdecode(b"\xff\xfe not utf-8 \x80"), "\x01\x1b[31m",
]


def cluster(folder: Path, *, sync_checkpoints: bool = False) -> Path:
    """A cluster.yaml in ``folder`` with the short timeouts above, its job root ``folder/jobs``."""
    path = folder / "cluster.yaml"
    sync = "checkpoint_write: sync, " if sync_checkpoints else ""
    path.write_text(
        "name: local-tests\n"
        "partitions:\n"
        "  - {name: cpu, nodes: 'node[1-2]', gpus_per_node: 0, cpus_per_node: 2, mem_per_node: 4G}\n"
        f"launcher: {{init_timeout: {INIT_TIMEOUT}, collective_timeout: {COLLECTIVE_TIMEOUT}, {sync}"
        f"job_root: '{folder / 'jobs'}'}}\n", encoding="utf-8")
    return path


def processes_naming(job_dir: Path) -> list[int]:
    """PIDs whose command line names the job folder (its ranks and their children), zombies left out."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(job_dir) in cmdline and state != "Z":
            pids.append(int(entry.name))
    return pids


def _faulty(cluster_path: Path, *params: str, timeout: float) -> subprocess.CompletedProcess[str]:
    merged = dict(p.split("=", 1) for p in (*FAULTY_PARAMS, *params))
    argv = [ORCH, "run", "--cluster", str(cluster_path), "--json", str(FAULTY), "--nproc", "2",
            *(f"{k}={v}" for k, v in merged.items())]
    return subprocess.run(argv, capture_output=True, text=True, env=clean_environ(), timeout=timeout, check=False)


def faulty_reference(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """The uninterrupted run (its ``--json`` summary on stdout); it completed."""
    def make(folder: Path) -> subprocess.CompletedProcess[str]:
        proc = _faulty(cluster(folder), timeout=180)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc

    return sharedruns.once(tmp_path_factory, "faulty-reference", make)


def faulty_preempted(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """The preempted run (its ``--json`` summary on stdout): ``signal_step=40 signal_rank=1``."""
    def make(folder: Path) -> subprocess.CompletedProcess[str]:
        return _faulty(cluster(folder), "signal_step=40", "signal_rank=1", timeout=180)

    return sharedruns.once(tmp_path_factory, "faulty-preempted-rank1-step40", make)


def faulty_failure(tmp_path_factory: pytest.TempPathFactory, fault: str, rank: int, step: int) -> dict[str, Any]:
    """``{"proc": the orch run, "seconds": its wall time, "left": processes_naming(its job folder) as it ended}``
    of the job with ``fault`` on rank ``rank`` at its step ``step``."""
    def make(folder: Path) -> dict[str, Any]:
        started = time.monotonic()
        proc = _faulty(cluster(folder, sync_checkpoints=True), f"fault={fault}", f"fault_rank={rank}",
                       f"fault_step={step}", timeout=FAILURE_TIMEOUT)
        seconds = time.monotonic() - started
        assert proc.stdout.strip(), f"no JSON summary on stdout; stderr:\n{proc.stderr[-3000:]}"
        left = processes_naming(folder / "jobs")
        return {"proc": proc, "seconds": seconds, "left": left}

    return sharedruns.once(tmp_path_factory, f"faulty-{fault}-rank{rank}-step{step}", make)


def script_env(**extra: str) -> dict[str, str]:
    """A script's environment: the checkout importable, OMP_NUM_THREADS unset (torchrun sets 1 when it is unset;
    orch sets the task's CPUs)."""
    env = clean_environ(PYTHONPATH=str(ROOT), **extra)
    env.pop("OMP_NUM_THREADS", None)
    return env


def ddp_train(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``{"proc": the orch run (bytes), "folder": where it ran: elsewhere/ its cwd, jobs/ its job root, out/ the
    ranks' records}``; the run is checked by its readers."""
    def make(folder: Path) -> dict[str, Any]:
        elsewhere = folder / "elsewhere"
        elsewhere.mkdir()
        rel = os.path.relpath(DDP, elsewhere)  # a relative path: resolved against the cwd of the command
        proc = subprocess.run([ORCH, "run", rel, "--nproc", "2", "--cpu", "--json", "--job-root", str(folder / "jobs"),
                               "--", "--out", str(folder / "out"), *DDP_STEPS, "--", *HOSTILE],
                              cwd=elsewhere, env=script_env(), capture_output=True, timeout=180, check=False)
        return {"proc": proc, "folder": folder}

    return sharedruns.once(tmp_path_factory, "ddp-train-hostile-args", make)


def job_dir_under(root: Path) -> Path:
    [job_dir] = [p for p in root.iterdir() if (p / "job.json").is_file()]
    return job_dir
