"""Dying and stuck ranks: real processes, gloo on CPU, tests/jobs/faulty.py (faults on purpose).

tests/local/test_runner.py covers ``orch run`` when rank 1 raises, is killed or exits 0, and when one rank
skips a collective (rank 0's run below). This file fills the gaps:

* the shared entrypoint alone, as ``srun`` starts it (Slurm task variables, no ``orch run``
  watching and stopping the others): each survivor must end by itself, non-zero, naming its rank,
  within the configured timeout of the fault; a rank that exits 0 in the middle of training
  (which ``srun --kill-on-bad-exit`` does not treat as a failure) must not leave the others hanging;
* the fault on rank 0 (which also hosts the rendezvous store) under ``orch run`` (launcher.collective_timeout
  ``sharedlocal.COLLECTIVE_TIMEOUT``, 5 s, there);
* after each fault, the last checkpoint (written at the end of epoch 1) still loads.

The fault is at a rank's step 40, in epoch 2 (32 steps per epoch), after the epoch 1 checkpoint.
The timeout (launcher.init_timeout) is 10 s; ``MARGIN`` absorbs process exits on a loaded machine.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest
from local import sharedlocal
from support import TESTS, clean_environ

from orchestrator.env import taskenv
from orchestrator.local.rankenv import free_port
from orchestrator.records.jobcreate import write_run_config
from orchestrator.spec.cluster import Launcher
from orchestrator.spec.runconfig import CHECKPOINT_DIR, LOG_DIR, METRICS_FILE, RunConfig

FAULTY = TESTS / "jobs" / "faulty.py"
TIMEOUT = 10  # launcher.init_timeout and launcher.collective_timeout: rendezvous and collectives
MARGIN = 25  # seconds on top of TIMEOUT for processes to notice, report and exit
START_BUDGET = 180  # a run that has not reached epoch 2 by then is broken, not slow
FAULT_STEP = 40
PARAMS = {"epochs": 3, "samples": 1024, "test_samples": 64, "fault_step": FAULT_STEP}

pytestmark = pytest.mark.slow


@dataclass
class Ranks:
    """The processes of one job started like srun starts them, and what became of them."""

    job_dir: Path
    procs: list[subprocess.Popen[bytes]]
    fault_seen_at: float | None = None  # when epoch 1's metrics appeared (the fault is 8 steps later)
    exited_at: dict[int, float] = field(default_factory=dict)

    def log(self, rank: int) -> str:
        return (self.job_dir / LOG_DIR / f"task-rank{rank}.out").read_text(encoding="utf-8", errors="replace")

    @property
    def codes(self) -> list[int | None]:
        return [p.returncode for p in self.procs]


def job_folder(tmp_path: Path, mode: str = "slurm", **params: object) -> Path:
    job_dir = tmp_path / "job folder"
    (job_dir / LOG_DIR).mkdir(parents=True)
    (job_dir / CHECKPOINT_DIR).mkdir()
    write_run_config(
        job_dir,
        RunConfig(
            mode=mode,
            job_name="faulty",
            job_file=str(FAULTY),
            params={**PARAMS, **params},
            nodes=1,
            gpus_per_node=0,
            tasks_per_node=2,
            cpus_per_task=1,
            job_dir=str(job_dir),
            # the epoch 1 checkpoint is on disk before epoch 2 starts (a background write could still be
            # running at the fault, 8 steps later, on a loaded machine: tests/runtime/test_asyncsave_runs.py)
            launcher=Launcher(init_timeout=TIMEOUT, collective_timeout=TIMEOUT, checkpoint_write="sync"),
            created=datetime.now().isoformat(timespec="seconds"),
        ),
    )
    return job_dir


def start_like_srun(job_dir: Path, nproc: int = 2) -> Ranks:
    """``srun python -m orchestrator.runtime.launch --job-dir DIR`` on one node: the Slurm 22.05 task
    variables of each rank (the same simulation the dry run uses), MASTER_ADDR/PORT exported."""
    port = free_port()
    envs = taskenv.simulate_slurm_task_envs(["localhost"], nproc, "9001", 0, "127.0.0.1", port)
    procs = []
    for rank, task_env in enumerate(envs):
        out = (job_dir / LOG_DIR / f"task-rank{rank}.out").open("wb")
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "orchestrator.runtime.launch", "--job-dir", str(job_dir)],
                env=clean_environ(**task_env),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
        out.close()
    return Ranks(job_dir=job_dir, procs=procs)


def watch(ranks: Ranks) -> Ranks:
    """Wait for every process without stopping any (nobody does it for them under srun), unless
    one hangs past the limit: then kill all and fail."""
    started = time.monotonic()
    metrics = ranks.job_dir / METRICS_FILE
    while len(ranks.exited_at) < len(ranks.procs):
        now = time.monotonic()
        if ranks.fault_seen_at is None and metrics.exists():
            ranks.fault_seen_at = now
        for rank, proc in enumerate(ranks.procs):
            if rank not in ranks.exited_at and proc.poll() is not None:
                ranks.exited_at[rank] = now
        limit = (ranks.fault_seen_at or started + START_BUDGET) + TIMEOUT + MARGIN
        if now > limit:
            for proc in ranks.procs:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            logs = "\n".join(f"--- rank {r} ---\n{ranks.log(r)[-2000:]}" for r in range(len(ranks.procs)))
            pytest.fail(f"ranks still running {now - started:.0f} s after start (hang):\n{logs}")
        time.sleep(0.05)
    return ranks


def assert_all_gone_in_time(ranks: Ranks) -> None:
    assert ranks.fault_seen_at is not None, "epoch 1 never finished"
    last = max(ranks.exited_at.values())
    print(f"all ranks gone {last - ranks.fault_seen_at:.1f} s after epoch 1 ended (fault 8 steps later)")
    assert last - ranks.fault_seen_at < TIMEOUT + MARGIN
    for proc in ranks.procs:
        with pytest.raises(ProcessLookupError):
            os.killpg(proc.pid, 0)  # nothing of the rank's process group is left


def assert_checkpoint_of_epoch_1_loads(job_dir: Path) -> None:
    from orchestrator.runtime.checkpoint import read_checkpoint

    state = read_checkpoint(job_dir / CHECKPOINT_DIR / "latest.pt")
    assert state["epoch"] == 1 and state["step"] == 0


# --- the shared entrypoint alone (as srun starts it) ------------------------------------------


@pytest.mark.parametrize("dying", [0, 1])
def test_sigkilled_rank_the_survivor_ends_itself(dying: int, tmp_path: Path) -> None:
    ranks = watch(start_like_srun(job_folder(tmp_path, fault="kill", fault_rank=dying)))
    survivor = 1 - dying
    assert ranks.codes[dying] == -signal.SIGKILL
    assert ranks.codes[survivor] not in (0, None)
    log = ranks.log(survivor)
    assert f"orch: error: rank {survivor} failed" in log and "HINT:" in log, log[-3000:]
    assert_all_gone_in_time(ranks)
    assert_checkpoint_of_epoch_1_loads(ranks.job_dir)


@pytest.mark.parametrize("failing", [0, 1])
def test_raising_rank_is_named_and_the_other_ends_itself(failing: int, tmp_path: Path) -> None:
    ranks = watch(start_like_srun(job_folder(tmp_path, fault="raise", fault_rank=failing)))
    other = 1 - failing
    assert ranks.codes[failing] == 1
    assert (
        f"orch: error: rank {failing} failed: RuntimeError: injected failure on rank {failing}"
        in ranks.log(failing)
    )
    assert ranks.codes[other] not in (0, None)
    assert f"orch: error: rank {other}" in ranks.log(other), ranks.log(other)[-3000:]
    assert_all_gone_in_time(ranks)
    assert_checkpoint_of_epoch_1_loads(ranks.job_dir)


def test_rank_skipping_a_collective_fails_both_within_the_timeout(tmp_path: Path) -> None:
    ranks = watch(start_like_srun(job_folder(tmp_path, fault="skip_barrier", fault_rank=1)))
    assert all(code not in (0, None) for code in ranks.codes), ranks.codes
    for rank in (0, 1):
        log = ranks.log(rank)
        assert f"orch: error: rank {rank}" in log, log[-3000:]
    assert any(
        f"within {TIMEOUT} s" in ranks.log(rank) or f"after {TIMEOUT} s" in ranks.log(rank) for rank in (0, 1)
    ), "the timeout is named"
    assert_all_gone_in_time(ranks)
    assert_checkpoint_of_epoch_1_loads(ranks.job_dir)


def test_rank_exiting_0_mid_training_does_not_leave_the_other_hanging(tmp_path: Path) -> None:
    """srun --kill-on-bad-exit only reacts to non-zero exits: the other rank must fail by itself."""
    ranks = watch(start_like_srun(job_folder(tmp_path, fault="exit0", fault_rank=1)))
    assert ranks.codes[1] == 0
    assert ranks.codes[0] not in (0, None)
    assert "orch: error: rank 0" in ranks.log(0), ranks.log(0)[-3000:]
    assert_all_gone_in_time(ranks)
    assert_checkpoint_of_epoch_1_loads(ranks.job_dir)


# --- orch run with the fault on rank 0 (the rendezvous host) -----------------------------------


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ("kill", "rank 0 was killed by SIGKILL"),
        ("raise", "rank 0 exited with code 1"),
        ("skip_barrier", "timed out"),
    ],
)
def test_orch_run_fault_on_rank_0(fault: str, says: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The run is made once per session (tests/local/sharedlocal.py: faulty.py's 2 epochs of 32 steps, the fault
    at step 40, checkpoints written on the training thread as job_folder's): test_runner.py's failing-rank test
    reads the skip_barrier run, test_runner_errors_once.py the raise."""
    made = sharedlocal.faulty_failure(tmp_path_factory, fault, 0, FAULT_STEP)
    proc, elapsed = made["proc"], made["seconds"]
    summary = json.loads(proc.stdout)
    assert proc.returncode != 0 and summary["status"] == "failed", proc.stderr[-3000:]
    assert says in summary["message"] and "orch: error:" in proc.stderr
    if fault != "skip_barrier":
        assert summary["failed_rank"] == 0
    job_dir = Path(summary["job_dir"])
    assert_checkpoint_of_epoch_1_loads(job_dir)
    leftovers = made["left"]  # the processes naming the job folder the moment orch run ended
    assert leftovers == [], f"processes left running: {leftovers}"
    assert elapsed < START_BUDGET + TIMEOUT + MARGIN
