"""Hardening, third round (issue 24): numbers that are not numbers, and numbers nobody downstream can hold.

1. A run whose numbers are not numbers is a failure: a metric that is NaN/inf only in evaluation (the
   training loss finite), an epoch whose every step ``on_nonfinite=skip`` skipped. Real ``orch run``
   of tests/jobs/nonfinite.py, 2 ranks, gloo on CPU.
2. Values the ranks or Slurm would reject or wrap are refused at submit, before anything is written
   (orchestrator/spec/bounds.py, the one table): hyperparameters (also when a job redeclares a built-in
   field with a new default), cluster.yaml's timeouts, CPUs, memory and time limits, ``--time``, the
   counts ``orch submit`` passes to Slurm, ``--array-throttle``.
3. ``orch logs --interval`` is finite and sane; ``orch logs`` reads the tail of a 3 GiB log, never the file.
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import ORCH, TEST_CLUSTER, clean_environ

from orchestrator.cli import main
from orchestrator.records.logs.view import MAX_PENDING, MAX_TAIL_BYTES, Source, copy_new, tail_lines
from orchestrator.runtime.metrics import EpochMetrics, epoch_problem
from orchestrator.spec.bounds import BOUNDS, TRAIN_PARAMS, param_problem
from orchestrator.spec.job import TrainParams
from orchestrator.spec.runconfig import RESULT_FILE

TESTS = Path(__file__).resolve().parent
NONFINITE = TESTS / "jobs" / "nonfinite.py"
FAULTY = TESTS / "jobs" / "faulty.py"
RUN_TIMEOUT = 240


def cluster_file(tmp_path: Path, **sections: Any) -> Path:
    data: dict[str, Any] = {**TEST_CLUSTER, "launcher": {**TEST_CLUSTER["launcher"],
                                                          "job_root": str(tmp_path / "jobs")}}
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def refused(argv: list[str], capsys: pytest.CaptureFixture[str], must_name: list[str],
            jobs: Path | None = None) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("orch: error:") == 1 and "HINT:" in err and "Traceback" not in err, err
    for text in must_name:
        assert text in err, f"{text!r} not in {err!r}"
    if jobs is not None:
        assert not jobs.exists() or not any(jobs.iterdir()), list(jobs.iterdir())
    return err


# --- 1. non-finite results are failures --------------------------------------------------------------

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


# --- 2. values the ranks or Slurm reject ----------------------------------------------------------

@pytest.mark.parametrize(("override", "names"), [
    ("lr=1e308", "lr=1e+308"), ("lr=10001", "lr=10001"), ("lr=1e-400", "lr"), ("momentum=1.5", "momentum"),
    ("weight_decay=1e300", "weight_decay"), ("lr_gamma=1e9", "lr_gamma"), ("lr_min=1e20", "lr_min"),
    ("progress_every=1e15", "progress_every"), (f"grad_accum={2**40}", "grad_accum"),
    (f"warmup_steps={10**15}", "warmup_steps"), (f"num_workers={10**6}", "num_workers"),
    (f"epochs={2**31}", "epochs"),  # faulty.py redeclares epochs without an upper bound
    ("step_sleep=1e39", "step_sleep"),  # the job's own float: float32
    ("step_sleep=-1e300", "step_sleep"),
])
def test_hyperparameters_the_ranks_cannot_use_are_refused_at_submit(
        override: str, names: str, tmp_path: Path, clean_env: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    cluster = cluster_file(tmp_path)
    for verb in (["submit", "--dry-run"], ["submit"], ["run", "--nproc", "2"]):
        refused([*verb, "--cluster", str(cluster), str(FAULTY), override], capsys, [names], jobs=tmp_path / "jobs")


@pytest.mark.parametrize("override", ["lr=10000", "lr=1e-30", "momentum=1", "progress_every=0", "step_sleep=3e38"])
def test_values_at_the_bounds_are_accepted(override: str, tmp_path: Path, clean_env: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["submit", "--dry-run", "--cluster", str(cluster_file(tmp_path)), str(FAULTY), override]) == 0, \
        capsys.readouterr().err


def test_every_bounded_train_param_is_a_field_and_a_redeclared_field_keeps_its_bound() -> None:
    numeric = {name for name, f in TrainParams.model_fields.items()
               if any(t in str(f.annotation) for t in ("int", "float")) and f.annotation is not bool}
    assert numeric == TRAIN_PARAMS and set(BOUNDS) >= TRAIN_PARAMS  # every number of TrainParams is bounded

    class Mine(TrainParams):
        lr: float = 0.5  # no bound of its own
        batch_size: int = 8

    with pytest.raises(ValueError, match="lr=1e\\+20 must be more than 0"):
        Mine(lr=1e20)
    with pytest.raises(ValueError, match="batch_size"):
        Mine(batch_size=2**40)
    assert param_problem("tag", 1e30) is None and param_problem("tag", 1e39) is not None


@pytest.mark.parametrize(("section", "value", "names"), [
    ("launcher", {"init_timeout": 10**15}, "init_timeout"),
    ("launcher", {"collective_timeout": 10**15}, "collective_timeout"),
    ("launcher", {"srun_wait": 10**15}, "srun_wait"),
    ("launcher", {"preempt_before": 2**63}, "preempt_before"),
    ("launcher", {"init_timeout": 8 * 86400}, "init_timeout"),
    ("defaults", {"time": "99999999-00:00:00"}, "time"),
    ("defaults", {"time": "366-00:00:00"}, "time"),
    ("defaults", {"cpus_per_task": 2**32 + 1}, "cpus_per_task"),
    ("defaults", {"mem_per_gpu": "999999999999999T"}, "mem_per_gpu"),
    ("partitions", [{"name": "p", "nodes": "n[1-2]", "gpus_per_node": 0, "cpus_per_node": 2**32 + 1,
                     "mem_per_node": "1G"}], "cpus_per_node"),
    ("partitions", [{"name": "p", "nodes": "n[1-2]", "gpus_per_node": 0, "cpus_per_node": 2,
                     "mem_per_node": "9" * 15 + "T"}], "mem_per_node"),
    ("partitions", [{"name": "p", "nodes": "n[1-2]", "gpus_per_node": 0, "cpus_per_node": 2,
                     "mem_per_node": 2**60}], "mem_per_node"),
    ("partitions", [{"name": "p", "nodes": "n[1-2]", "gpus_per_node": 0, "cpus_per_node": 2,
                     "mem_per_node": "1G", "max_time": "1000-00:00:00"}], "max_time"),
])
def test_cluster_yaml_values_slurm_or_the_ranks_cannot_hold_are_refused(
        section: str, value: Any, names: str, tmp_path: Path, clean_env: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    cluster = cluster_file(tmp_path, **{section: value})
    refused(["submit", "--dry-run", "--cluster", str(cluster), str(FAULTY)], capsys, [names], jobs=tmp_path / "jobs")


@pytest.mark.parametrize(("flags", "names"), [
    (["--time", "99999999-00"], "--time 99999999-00"),
    (["--time", "366-00:00:00"], "365 days"),
    (["--time", str(10**11)], "--time"),
    (["--nodes", str(2**32 + 1)], "--nodes"),
    (["--gpus", str(2**32 + 1)], "--gpus"),
    (["--cpus-per-task", str(2**32 + 1)], "--cpus-per-task"),
    (["--cpus-per-task", str(2**16)], "--cpus-per-task"),
    (["--gpus", "0", "--ntasks-per-node", str(2**32 + 1)], "--ntasks-per-node"),
    (["--sweep", "lr=0.1,0.2", "--array-throttle", str(2**32 + 1)], "--array-throttle 4294967297"),
    (["--sweep", "lr=0.1,0.2", "--array-throttle", str(2**31)], "--array-throttle"),
    (["--sweep", "lr=0.1,0.2", "--array-throttle", "1001"], "at most 1000"),
    (["--sweep", "lr=0.1,0.2", "--array-throttle", "0"], "--array-throttle 0"),
])
def test_numbers_slurm_would_wrap_or_refuse_are_refused_before_anything_is_written(
        flags: list[str], names: str, tmp_path: Path, clean_env: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    cluster = cluster_file(tmp_path, partitions=[{**TEST_CLUSTER["partitions"][0], "max_time": "UNLIMITED"}])
    for dry in (["--dry-run"], []):
        refused(["submit", *dry, "--cluster", str(cluster), str(FAULTY), *flags], capsys, [names],
                jobs=tmp_path / "jobs")


def test_the_largest_allowed_values_still_submit(tmp_path: Path, clean_env: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    cluster = cluster_file(tmp_path, partitions=[{**TEST_CLUSTER["partitions"][0], "max_time": "UNLIMITED"}],
                           launcher={"init_timeout": 7 * 86400, "collective_timeout": 7 * 86400})
    assert main(["submit", "--dry-run", "--cluster", str(cluster), str(FAULTY), "--time", "365-00:00:00",
                 "--sweep", "lr=0.1,0.2", "--array-throttle", "1000"]) == 0
    assert "%1000" in capsys.readouterr().out


# --- 3. orch logs ------------------------------------------------------------------------------------

@pytest.mark.parametrize("interval", ["nan", "NaN", "inf", "-inf", "-1", "0", "1e300", "0.001", "3601"])
def test_logs_intervals_that_spin_or_never_wake_are_refused(interval: str, tmp_path: Path,
                                                            clean_env: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job"
    job.mkdir()
    # nan/inf are no number argparse takes (spec/numbers.ascii_float); the others fail the bounds table
    needles = ["--interval", "not a finite number", "e.g."] if "n" in interval.lower() else ["--interval", "HINT: e.g."]
    for follow in (["-f"], []):
        refused(["logs", str(job), *follow, f"--interval={interval}"], capsys, needles)


def _sparse_log(path: Path, size: int, tail: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        fh.truncate(size)  # a hole: no disk used, 3 GiB of NUL bytes when read
    with path.open("ab") as fh:
        fh.write(tail)


def test_logs_of_a_3_gib_log_show_its_last_lines_under_a_memory_limit(tmp_path: Path) -> None:
    root = tmp_path / "jobs"
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("name: t\npartitions:\n  - {name: cpu, nodes: 'n[1-2]', gpus_per_node: 0, cpus_per_node: 2, "
                       f"mem_per_node: 4G}}\nlauncher: {{job_root: '{root}'}}\n", encoding="utf-8")
    done = subprocess.run([ORCH, "run", "--cluster", str(cluster), "--json", str(NONFINITE), "--nproc", "1",
                           "epochs=1", "test_samples=0"], capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env=clean_environ(ORCH_STATE_DIR=str(tmp_path / "state")))
    assert done.returncode == 0, done.stderr[-2000:]
    job_dir = Path(json.loads(done.stdout)["job_dir"])
    log = job_dir / "logs" / "local-rank0.out"
    lines = [f"line {i} of the end\n".encode() for i in range(50)]
    _sparse_log(log, 3 << 30, b"\n" + b"".join(lines))

    def limit() -> None:  # 1 GiB of address space: reading the file whole cannot fit
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    proc = subprocess.run([ORCH, "logs", str(job_dir), "-n", "5"], capture_output=True, timeout=120,
                          env=clean_environ(ORCH_STATE_DIR=str(tmp_path / "state")), preexec_fn=limit)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.endswith(b"".join(lines[-5:])), proc.stdout[-500:]
    assert len(proc.stdout) < 1000


def test_tail_of_a_3_gib_file_without_newlines_reads_at_most_the_cap(tmp_path: Path) -> None:
    log = tmp_path / "big.out"
    _sparse_log(log, 3 << 30, b"\nthe end\n")
    found, size, left_out = tail_lines(log, 10, max_bytes=1 << 20)
    assert size == (3 << 30) + 9 and left_out
    assert found == [b"the end\n"]  # the 3 GiB "line" before it is cut at the cap and left out
    found, _, _ = tail_lines(log, 3)  # the default cap
    assert sum(map(len, found)) <= MAX_TAIL_BYTES


def test_following_a_line_that_never_ends_keeps_memory_bounded(tmp_path: Path) -> None:
    log = tmp_path / "big.out"
    _sparse_log(log, 64 << 20, b"")  # 64 MiB, not one newline
    source = Source(path=log, prefix=b"", offset=0)

    class Sink:
        written = 0

        def writelines(self, lines: Any) -> None:
            self.written += sum(len(x) for x in lines)

        def flush(self) -> None:
            pass

    out = Sink()
    for _ in range(20):
        copy_new([source], out)  # type: ignore[list-item, arg-type]
        assert len(source.pending) <= MAX_PENDING
    assert source.offset == os.path.getsize(log) and out.written >= (64 << 20) - MAX_PENDING
