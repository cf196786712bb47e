"""A job on a lazy, file-backed Dataset through DataLoader workers, on 2 real gloo ranks.

tests/jobs/lazy_regression.py: MSE loss, a custom ``mae`` metric, nested ``({"x": ...}, y)`` items,
noise augmentation in the workers and dropout in the model. The reference is one uninterrupted run
with workers, gradient accumulation and a cosine schedule with warm-up; a preempted and resumed run
must end with bit-identical parameters. Bad input (NaN loss, a vector metric, a sample of the wrong
shape, an IterableDataset, too many workers) ends with a clear message, never a hang.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sharedruns
from support import ORCH, TESTS, clean_environ

from orchestrator.spec.runconfig import LOG_DIR, METRICS_FILE, REQUEUE_FILE, RESULT_FILE

JOB = TESTS / "jobs" / "lazy_regression.py"
RUN_TIMEOUT = 240
# 202 samples on 2 ranks: 13 steps of 8 per rank, the last one partly padding; accumulation over 2; 2 DataLoader
# workers per rank where the task has 1 CPU (a warning, test_more_workers_than_cpus_is_a_warning, read on the
# reference run)
COMMON = ["epochs=3", "num_workers=2", "grad_accum=2", "lr_schedule=cosine", "warmup_steps=2"]

pytestmark = pytest.mark.slow


@pytest.fixture
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(cluster.yaml with 1 CPU per task for 2 ranks, data folder holding lazy/*.npy), made once per session."""
    def make(root: Path) -> tuple[Path, Path]:
        sys.path.insert(0, str(JOB.parent))
        try:
            from lazy_regression import write_data
        finally:
            sys.path.remove(str(JOB.parent))
        write_data(root / "data" / "lazy", train=202, test=50)
        cluster = root / "cluster.yaml"
        cluster.write_text(
            "name: lazy-tests\n"
            "partitions:\n"
            "  - {name: cpu, nodes: 'node[1-2]', gpus_per_node: 0, cpus_per_node: 2, mem_per_node: 4G}\n"
            f"launcher: {{init_timeout: 20, collective_timeout: 10, job_root: '{root / 'jobs'}'}}\n",
            encoding="utf-8")
        return cluster, root / "data"
    return sharedruns.once(tmp_path_factory, "lazy-regression-setup", make)


def orch(setup: tuple[Path, Path], *args: str) -> dict[str, Any]:
    cluster, data = setup
    argv = [ORCH, "run", "--cluster", str(cluster), "--json", *args]
    if "--resume" not in args:
        argv[2:2] = [str(JOB), *([] if "--nproc" in args else ["--nproc", "2"]), "--data-dir", str(data)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT, env=clean_environ())
    assert proc.stdout.strip(), proc.stderr[-3000:]
    summary: dict[str, Any] = json.loads(proc.stdout)
    summary["stderr"] = proc.stderr
    summary["code"] = proc.returncode
    return summary


def strict_lines(path: Path) -> list[dict[str, Any]]:
    def refuse(name: str) -> None:
        pytest.fail(f"{path.name} holds a bare {name}")

    return [json.loads(line, parse_constant=refuse) for line in path.read_text().splitlines()]


def log_of(summary: dict[str, Any], rank: int = 0) -> str:
    return (Path(summary["job_dir"]) / LOG_DIR / f"local-rank{rank}.out").read_text()


def why(summary: dict[str, Any]) -> str:
    """What a failed run said: orch run's stderr, then the end of each rank's log (a rank that orch
    run stopped for a hang holds the stacks of all its threads there: faulthandler on SIGTERM)."""
    parts = [summary["stderr"][-3000:]]
    for log in sorted((Path(summary.get("job_dir") or ".") / LOG_DIR).glob("local-rank*.out")):
        parts.append(f"--- {log.name} (end) ---\n{log.read_text(errors='replace')[-6000:]}")
    return "\n".join(parts)


@pytest.fixture
def straight(setup: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The uninterrupted reference run, made once per session (the tests only read it)."""
    def make(_: Path) -> dict[str, Any]:
        run = orch(setup, *COMMON)
        assert run["code"] == 0 and run["status"] == "completed", why(run)
        return run
    return sharedruns.once(tmp_path_factory, "lazy-regression-straight", make)


def test_regression_reports_its_metric_and_no_accuracy(straight: dict[str, Any]) -> None:
    job_dir = Path(straight["job_dir"])
    entries = strict_lines(job_dir / METRICS_FILE)
    assert [e["epoch"] for e in entries] == [1, 2, 3]
    for entry in entries:
        assert entry["metrics"] == ["mae"] and entry["train_samples"] == 202
        assert not [k for k in entry if "acc" in k], entry
        assert entry["train_mae"] > 0 and entry["test_mae"] > 0
    losses = [e["train_loss"] for e in entries]
    assert losses[2] < losses[0] / 2, losses
    assert entries[2]["test_mae"] < entries[0]["test_mae"]
    log = log_of(straight)
    assert "DataLoader, 2 worker(s) per rank" in log and "metrics: loss, mae" in log
    epoch_lines = [line for line in log.splitlines() if line.startswith("epoch ") and "train loss" in line]
    assert len(epoch_lines) == 3 and all(" mae " in line and " acc " not in line for line in epoch_lines)
    result = json.loads((job_dir / RESULT_FILE).read_text())
    assert result["final"] == entries[-1] and result["in_sync"] is True
    last = entries[-1]
    assert f"orch: completed; test_loss {last['test_loss']:.4g} test_mae {last['test_mae']:.4g}; results in" \
        in straight["stderr"]


def test_preempted_and_resumed_with_workers_and_accumulation_is_bit_identical(
        setup: tuple[Path, Path], straight: dict[str, Any]) -> None:
    # forward call 18 (call 0 settles DDP's buckets; 13 per epoch): in the middle of epoch 2
    stopped = orch(setup, *COMMON, "signal_step=18")
    assert stopped["code"] == 0 and stopped["status"] == "preempted", why(stopped)
    marker = (Path(stopped["job_dir"]) / REQUEUE_FILE).read_text()
    assert marker.startswith("epoch 2, step ")
    step = int(marker.split()[-1])
    assert 0 < step < 13 and step % 2 == 0, "stops only between optimizer steps"
    resumed = orch(setup, "--resume", stopped["job_dir"], "signal_step=-1")
    assert resumed["code"] == 0 and resumed["status"] == "completed", why(resumed)
    assert f"resuming from checkpoint at epoch 2, step {step}" in log_of(resumed)
    assert resumed["result"]["param_digest"] == straight["result"]["param_digest"]
    mine = strict_lines(Path(stopped["job_dir"]) / METRICS_FILE)
    reference = strict_lines(Path(straight["job_dir"]) / METRICS_FILE)
    for key in ("train_loss", "train_mae", "test_loss", "test_mae", "train_samples"):
        assert [e[key] for e in mine] == [e[key] for e in reference], key


def test_non_finite_loss_stops_every_rank_naming_epoch_and_step(setup: tuple[Path, Path]) -> None:
    run = orch(setup, *COMMON, "fault=nan", "fault_step=5")  # rank 1, its 5th training step (index 4)
    assert run["code"] == 1 and run["status"] == "failed", why(run)
    assert "non-finite loss (NaN or inf) on rank 1 at epoch 1, step 4" in run["message"]
    assert run["rank_exit_codes"] == [1, 1], "every rank stops by itself, with the message"
    for rank in (0, 1):
        assert "non-finite loss" in log_of(run, rank)
    assert not (Path(run["job_dir"]) / RESULT_FILE).exists()
    assert not (Path(run["job_dir"]) / "checkpoints" / "latest.pt").exists(), "no checkpoint of NaN weights"


def test_non_finite_loss_can_be_skipped_and_counted(setup: tuple[Path, Path]) -> None:
    run = orch(setup, *COMMON, "fault=nan", "fault_step=5", "on_nonfinite=skip")
    assert run["code"] == 0 and run["status"] == "completed", why(run)
    entries = strict_lines(Path(run["job_dir"]) / METRICS_FILE)
    assert [e["skipped_steps"] for e in entries] == [1, 0, 0]
    assert all(isinstance(e["train_loss"], float) for e in entries), "the skipped batch is not in the loss"
    assert run["result"]["in_sync"] is True
    assert "1 step(s) skipped (non-finite loss)" in log_of(run)


@pytest.mark.parametrize(("fault", "code", "says"), [
    ("bad_metric", 1, "job lazy_regression, the first batch (before training): metric 'mae' returned (8, 1), "
                      "not a scalar"),
    ("iterable", 2, "job lazy_regression: train_set is an IterableDataset"),
])
def test_bad_task_is_refused_on_every_rank_before_training(setup: tuple[Path, Path], fault: str, code: int,
                                                           says: str) -> None:
    # bad_metric: rank 0 is still leaving (its error's frames going, as a DataLoader joins its workers) when rank 1
    # has left and orch run stops it: a rank whose outcome is recorded ends with its own exit code, no stacks dumped
    run = orch(setup, *COMMON, f"fault={fault}", "slow_exit_rank=0")
    assert run["code"] == code and run["rank_exit_codes"] == [code, code], why(run)
    assert "stopped by SIGTERM" not in log_of(run, 0)
    assert says in run["message"]
    assert "HINT:" in log_of(run, 1)


def test_sample_of_the_wrong_shape_names_job_epoch_and_step(setup: tuple[Path, Path]) -> None:
    run = orch(setup, *COMMON[1:], "fault=bad_shape", "epochs=1")
    assert run["code"] in (1, 3) and run["status"] == "failed", why(run)
    assert "stack expects each tensor to be equal size" in run["message"], run["message"]
    assert "(job lazy_regression, epoch 1, step " in run["message"], run["message"]


def test_more_workers_than_cpus_is_a_warning(straight: dict[str, Any]) -> None:
    """The reference run has 2 workers per rank and 1 CPU per task: it warns, and completes."""
    assert straight["code"] == 0, why(straight)
    assert "warning: job lazy_regression: num_workers=2 DataLoader workers per rank, but the task has 1 CPU" \
        in log_of(straight)


def test_three_ranks_in_process_loading_with_accumulation_resume_bit_identical(setup: tuple[Path, Path]) -> None:
    """More than 2 ranks (DDP's bucket layout matters from 3 ranks on: 3 show it, and 202 samples do not
    split evenly over 3, so the sampler pads), no_sync windows, the Dataset read in the rank itself
    (num_workers=0): preempted in epoch 2 and resumed, as an uninterrupted run."""
    three = ["--nproc", "3", "epochs=2", "num_workers=0", "grad_accum=2", "lr_schedule=step"]
    straight3 = orch(setup, *three)
    assert straight3["code"] == 0 and straight3["result"]["in_sync"] is True, why(straight3)
    stopped = orch(setup, *three, "signal_step=13")  # 68 samples a rank, 9 steps per epoch: epoch 2, step 3
    assert stopped["status"] == "preempted", why(stopped)
    step = int((Path(stopped["job_dir"]) / REQUEUE_FILE).read_text().split()[-1])
    assert 0 < step < 9 and step % 2 == 0
    resumed = orch(setup, "--resume", stopped["job_dir"], "signal_step=-1")
    assert resumed["code"] == 0, why(resumed)
    assert resumed["result"]["param_digest"] == straight3["result"]["param_digest"]
