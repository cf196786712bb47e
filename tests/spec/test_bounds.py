"""Values the ranks or Slurm would reject or wrap are refused at submit, before anything is written
(orchestrator/spec/bounds.py, the one table): hyperparameters (also when a job redeclares a built-in field
with a new default), cluster.yaml's timeouts, CPUs, memory and time limits, ``--time``, the counts
``orch submit`` passes to Slurm, ``--array-throttle``; the largest allowed values still submit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from support import TEST_CLUSTER, TESTS

from orchestrator.cli import main
from orchestrator.spec.bounds import BOUNDS, TRAIN_PARAMS, param_problem
from orchestrator.spec.job import TrainParams

FAULTY = TESTS / "jobs" / "faulty.py"


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


# --- values the ranks or Slurm reject ----------------------------------------------------------

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
