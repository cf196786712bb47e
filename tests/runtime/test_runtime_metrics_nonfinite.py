"""A run whose numbers are not numbers is a failure: a metric that is NaN/inf only in evaluation (the training
loss finite), an epoch whose every step ``on_nonfinite=skip`` skipped. Pure checks of ``epoch_problem``, then
real ``orch run`` of tests/jobs/nonfinite.py, 2 ranks, gloo on CPU.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, TESTS, clean_environ

from orchestrator.runtime.metrics import EpochMetrics, epoch_problem
from orchestrator.spec.runconfig import RESULT_FILE

NONFINITE = TESTS / "jobs" / "nonfinite.py"

RUN_TIMEOUT = 240


# --- non-finite results are failures --------------------------------------------------------------

def _epoch(values: dict[str, float | None], *, skipped: int = 0, samples: int = 100) -> EpochMetrics:
    return EpochMetrics(epoch=3, epochs=5, values=values, names=("acc",), samples_per_s=1.0, seconds=1.0,
                        world_size=2, train_samples=samples, steps=8, skipped_steps=skipped)

FINE = {"train_loss": 0.5, "train_acc": 0.9, "test_loss": None, "test_acc": None}


@pytest.mark.parametrize(("key", "value"), [
    ("test_loss", math.nan), ("test_loss", math.inf), ("test_acc", -math.inf), ("train_acc", math.nan),
    ("train_loss", math.inf), ("test_acc", math.nan),
])
def test_any_nonfinite_metric_makes_the_epoch_a_failure(key: str, value: float) -> None:
    problem = epoch_problem(_epoch({**FINE, key: value}), "j", opt_steps=8)
    assert problem is not None
    assert "epoch 3" in problem[0] and key in problem[0] and "lower lr" in problem[1]


@pytest.mark.parametrize(("skipped", "opt_steps", "samples", "says"), [
    (8, 8, 0, "every optimizer step (8 of 8)"),
    (4, 4, 0, "every optimizer step (4 of 4)"),
    (1, 1, 0, "every optimizer step (1 of 1)"),
    (0, 8, 0, "trained on no sample"),
])
def test_an_epoch_that_trained_nothing_is_a_failure(skipped: int, opt_steps: int, samples: int, says: str) -> None:
    problem = epoch_problem(_epoch({**FINE, "train_loss": None, "train_acc": None}, skipped=skipped,
                                   samples=samples), "j", opt_steps=opt_steps)
    assert problem is not None and says in problem[0]


@pytest.mark.parametrize("skipped", [0, 1, 7])
def test_finite_epochs_with_some_skipped_steps_pass(skipped: int) -> None:
    assert epoch_problem(_epoch(FINE, skipped=skipped), "j", opt_steps=8) is None


def _orch_run(tmp_path: Path, *params: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "name: local-tests\npartitions:\n"
        "  - {name: cpu, nodes: 'node[1-2]', gpus_per_node: 0, cpus_per_node: 2, mem_per_node: 4G}\n"
        f"launcher: {{init_timeout: 30, collective_timeout: 10, job_root: '{tmp_path / 'jobs'}'}}\n",
        encoding="utf-8")
    proc = subprocess.run([ORCH, "run", "--cluster", str(cluster), "--json", str(NONFINITE), "--nproc", "2",
                           *params], capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env=clean_environ(ORCH_STATE_DIR=str(tmp_path / "state")))
    assert proc.stdout.strip(), proc.stderr[-3000:]
    return proc, json.loads(proc.stdout)


@pytest.mark.slow
@pytest.mark.parametrize(("params", "says"), [
    (["nan_in=eval"], "epoch 1: non-finite test_loss=nan"),
    (["nan_in=metric_inf", "batch_size=7"], "epoch 1: non-finite test_score=inf"),
    (["nan_in=metric", "test_samples=17"], "epoch 1: non-finite test_score=nan"),
    (["nan_in=train", "on_nonfinite=skip"], "epoch 1: every optimizer step (4 of 4) was skipped"),
    (["nan_in=train", "on_nonfinite=skip", "grad_accum=3", "samples=200"],
     "epoch 1: every optimizer step (3 of 3) was skipped"),
    # epoch 1 trains (2 of 4 steps skipped), epoch 2 skips every step
    (["nan_in=train", "nan_from=3", "on_nonfinite=skip"], "epoch 2: every optimizer step (4 of 4) was skipped"),
])
def test_orch_run_fails_when_the_numbers_are_not_numbers(tmp_path: Path, params: list[str], says: str) -> None:
    proc, summary = _orch_run(tmp_path, "epochs=2", *params)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert summary["status"] == "failed" and summary["exit_code"] == 1
    assert says in summary["message"], summary["message"]
    assert summary["failure"]["message"] == summary["message"]  # the ranks' outcome records say why
    last = proc.stderr.strip().splitlines()
    assert any(line.startswith("orch: error: ") and says in line for line in last), proc.stderr[-2000:]
    job_dir = Path(summary["job_dir"])
    assert not (job_dir / RESULT_FILE).exists()  # never "completed"


@pytest.mark.slow
def test_orch_run_still_completes_with_finite_numbers_and_a_few_skipped_steps(tmp_path: Path) -> None:
    proc, summary = _orch_run(tmp_path, "epochs=1", "nan_in=train", "nan_from=4", "on_nonfinite=skip")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert summary["status"] == "completed"
    result = json.loads((Path(summary["job_dir"]) / RESULT_FILE).read_text())
    assert result["final"]["skipped_steps"] == 1 and math.isfinite(result["final"]["test_loss"])
