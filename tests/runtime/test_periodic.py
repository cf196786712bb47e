"""Periodic checkpoints (``TrainParams.checkpoint_every``).

Rank 0's clock decides and the stop vote carries its word to every rank (never a per-rank clock);
the checkpoint is the preemption path's mid-epoch one, so a run killed after it resumes bit-exact.
Real runs: ``orch run`` with 2 gloo processes on CPU (tests/jobs/faulty.py, the smoke model).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from local import sharedlocal
from support import ORCH, TESTS, clean_environ

from orchestrator.env.devices import CPU
from orchestrator.local.rankenv import free_port
from orchestrator.runtime.dist import Dist, StopVote, process_group
from orchestrator.runtime.periodic import PeriodicClock
from orchestrator.spec.job import TrainParams
from orchestrator.spec.runconfig import CHECKPOINT_DIR, LOG_DIR
from orchestrator.task.preempt import PreemptFlag

FAULTY = TESTS / "jobs" / "faulty.py"
PARAMS = sharedlocal.FAULTY_PARAMS  # 32 steps per epoch on 2 ranks (the shared reference's)
RUN_TIMEOUT = 180
CHECKPOINT_LINE = re.compile(r"orch: checkpoint at epoch (\d+), step (\d+) \(checkpoint_every")


# --- the clock and the vote (one rank) ------------------------------------------------------------------

def test_the_clock_is_due_after_every_seconds_and_a_checkpoint_restarts_it() -> None:
    now = [100.0]
    clock = PeriodicClock(10.0, clock=lambda: now[0])
    assert not clock.due()
    now[0] = 109.9
    assert not clock.due()
    now[0] = 110.0
    assert clock.due()
    clock.reset()
    assert not clock.due()
    assert not PeriodicClock(0.0, clock=lambda: 1e9).due()  # 0: epochs only


def test_the_default_and_the_bounds() -> None:
    assert TrainParams().checkpoint_every == 1800.0
    assert TrainParams(checkpoint_every=0).checkpoint_every == 0
    for bad in (-1, 7 * 86_400 + 1, float("nan")):
        with pytest.raises(ValueError, match="checkpoint_every"):
            TrainParams(checkpoint_every=bad)


@pytest.fixture
def single_rank() -> Iterator[Dist]:
    with process_group(rank=0, world_size=1, local_rank=0, master_addr="127.0.0.1", master_port=free_port(),
                       choice=CPU, timeout=30, collective_timeout=30) as ctx:
        yield ctx


def test_the_vote_says_a_checkpoint_is_due_once_and_leaves_nothing_in_flight(single_rank: Dist) -> None:
    due = [False]
    vote = StopVote(PreemptFlag("USR2"), single_rank, due=lambda: due[0])
    assert vote.should_stop() is False and vote.take_checkpoint() is False
    due[0] = True
    assert vote.should_stop() is False  # this boundary's vote carries it
    assert vote.take_checkpoint() is False
    due[0] = False
    assert vote.should_stop() is False  # ... read here: due, and no new vote started
    assert vote._pending is None
    assert vote.take_checkpoint() is True and vote.take_checkpoint() is False
    assert vote.should_stop() is False and vote._pending is not None
    vote.drain()


def test_a_stop_wins_over_a_due_checkpoint(single_rank: Dist) -> None:
    flag = PreemptFlag("USR2")
    vote = StopVote(flag, single_rank, due=lambda: True)
    flag.request()
    assert vote.should_stop() is False
    assert vote.should_stop() is True


# --- real runs: 2 gloo processes ---------------------------------------------------------------------------



@pytest.fixture(scope="module")
def cluster_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("periodic")
    path = root / "cluster.yaml"
    path.write_text(
        "name: local-tests\n"
        "partitions:\n"
        "  - {name: cpu, nodes: 'node[1-2]', gpus_per_node: 0, cpus_per_node: 2, mem_per_node: 4G}\n"
        f"launcher: {{init_timeout: 20, collective_timeout: 10, job_root: '{root / 'jobs'}'}}\n", encoding="utf-8")
    return path


def orch_run(cluster: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = subprocess.run([ORCH, "run", "--cluster", str(cluster), "--json", *args], capture_output=True, text=True,
                          env=clean_environ(), timeout=RUN_TIMEOUT, check=False)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    return proc, json.loads(proc.stdout)


def faulty(cluster: Path, *params: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    merged = dict(p.split("=", 1) for p in (*PARAMS, *params))
    return orch_run(cluster, str(FAULTY), "--nproc", "2", *(f"{k}={v}" for k, v in merged.items()))


def digest(summary: dict[str, Any]) -> str:
    assert summary["result"] is not None, summary
    value: str = summary["result"]["param_digest"]
    return value


@pytest.fixture
def straight(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The reference: no interruption and no periodic checkpoint (the default interval is far away): the session's
    uninterrupted run of the same job and parameters (tests/local/sharedlocal.py; its timeouts differ, which the
    parameters do not see)."""
    proc = sharedlocal.faulty_reference(tmp_path_factory)
    summary = json.loads(proc.stdout)
    log = (Path(summary["job_dir"]) / LOG_DIR / "local-rank0.out").read_text()
    assert not CHECKPOINT_LINE.search(log)
    return digest(summary)


@pytest.mark.slow
def test_periodic_checkpoints_leave_the_parameters_as_they_were(cluster_file: Path, straight: str) -> None:
    proc, summary = faulty(cluster_file, "checkpoint_every=0.1", "step_sleep=0.02")
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = (Path(summary["job_dir"]) / LOG_DIR / "local-rank0.out").read_text()
    steps = [(int(e), int(s)) for e, s in CHECKPOINT_LINE.findall(log)]
    assert len(steps) >= 2 and all(0 < s < 32 for _, s in steps), log[-3000:]
    assert digest(summary) == straight
    assert summary["result"]["in_sync"] is True


@pytest.mark.slow
def test_a_run_killed_after_a_periodic_checkpoint_resumes_bit_exact(cluster_file: Path, straight: str) -> None:
    from orchestrator.runtime.checkpoint import read_checkpoint

    # rank 1 kills itself with SIGKILL at its 25th forward pass (the first is the bucket-settling pass):
    # epoch 1, after 23 steps; epoch checkpoints alone would lose all of them
    killed, summary = faulty(cluster_file, "fault=kill", "fault_step=24", "step_sleep=0.05",
                             "checkpoint_every=0.25")
    assert killed.returncode == 128 + signal.SIGKILL, killed.stderr[-3000:]
    assert summary["failed_rank"] == 1
    job_dir = Path(summary["job_dir"])
    log = (job_dir / LOG_DIR / "local-rank0.out").read_text()
    steps = [int(s) for e, s in CHECKPOINT_LINE.findall(log) if e == "1"]
    assert len(steps) >= 2, log[-3000:]
    state = read_checkpoint(job_dir / CHECKPOINT_DIR / "latest.pt")
    assert (state["epoch"], state["step"]) == (0, steps[-1])  # mid-epoch 1: the last periodic one
    # lost work: at most one interval, i.e. no more steps than the widest gap between two checkpoints
    # (each gap is one interval plus the vote's one-step lag)
    gaps = [b - a for a, b in zip([0, *steps], steps, strict=False)]
    assert 23 - steps[-1] <= max(gaps) + 1, (steps, log[-2000:])
    resumed, again = orch_run(cluster_file, "--resume", str(job_dir), "fault=none", "step_sleep=0")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming from checkpoint at epoch 1, step {steps[-1]}" in \
        (job_dir / LOG_DIR / "local-rank0.out").read_text()
    assert digest(again) == straight


@pytest.mark.slow
def test_with_accumulation_checkpoints_fall_on_optimizer_steps_and_resume_bit_exact(cluster_file: Path) -> None:
    from orchestrator.runtime.checkpoint import read_checkpoint

    proc, summary = faulty(cluster_file, "grad_accum=3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    reference = digest(summary)
    killed, summary = faulty(cluster_file, "grad_accum=3", "fault=kill", "fault_step=45", "step_sleep=0.04",
                             "checkpoint_every=0.2")
    assert killed.returncode == 128 + signal.SIGKILL, killed.stderr[-3000:]
    job_dir = Path(summary["job_dir"])
    steps = [(int(e), int(s)) for e, s in CHECKPOINT_LINE.findall((job_dir / LOG_DIR / "local-rank0.out").read_text())]
    assert steps and all(s % 3 == 0 for _, s in steps), steps  # never half an accumulation window
    state = read_checkpoint(job_dir / CHECKPOINT_DIR / "latest.pt")
    assert state["epoch"] == 1 and state["step"] == steps[-1][1] > 0, (state["epoch"], state["step"], steps)
    resumed, again = orch_run(cluster_file, "--resume", str(job_dir), "fault=none", "step_sleep=0")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert digest(again) == reference
