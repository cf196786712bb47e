"""W&B (offline) and MLflow (file store), the real packages: every attempt of one job logs to ONE run, a
sweep's elements share one group / parent run; a missing package names its extra; the run ids."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, ROOT, clean_environ

from orchestrator.errors import ConfigError
from orchestrator.spec.tracking import group_id, merge_tracking, run_id

FAULTY = ROOT / "tests" / "jobs" / "faulty.py"


def test_run_ids_are_stable_valid_and_differ_between_folders(tmp_path: Path) -> None:
    job = tmp_path / "mnist-20261125-120000-abcdef"
    assert run_id(job) == run_id(str(job))
    assert run_id(job) != run_id(tmp_path / "other" / job.name)
    hostile = tmp_path / ("a b/c:d#?%" + "x" * 200)
    rid = run_id(hostile)
    assert len(rid) <= 64 and all(c.isalnum() or c in "-_" for c in rid)
    assert group_id(job / "3", True) == run_id(job) and group_id(job, False) is None


def test_merge_tracking_checks_names_and_keeps_each_once() -> None:
    assert merge_tracking(["wandb"], ["MLflow,wandb", " "]) == ["wandb", "mlflow"]
    with pytest.raises(ConfigError, match="unknown tracker 'tensorboard'"):
        merge_tracking(["tensorboard"])


@pytest.mark.parametrize("name", ["wandb", "mlflow"])
def test_a_missing_package_names_its_extra(name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from orchestrator.task.trackers import open_sink

    monkeypatch.setitem(sys.modules, name, None)  # import fails as when it is not installed
    with pytest.raises(ConfigError) as caught:
        open_sink(name, job_dir=tmp_path, run_id="r", group=None, job_name="j", config={})
    assert f"orch[{name}]" in (caught.value.hint or "")


def wandb_dirs(tmp_path: Path) -> dict[str, str]:
    """W&B's own folders (settings, cache, artifacts) inside the test's folder, not the user's home."""
    return {name: str(tmp_path / "wandb-home") for name in ("WANDB_DIR", "WANDB_CONFIG_DIR", "WANDB_CACHE_DIR",
                                                            "WANDB_DATA_DIR")}


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    store = tmp_path / "mlruns"
    for key, value in {**wandb_dirs(tmp_path), "WANDB_MODE": "offline", "WANDB_SILENT": "true",
                       "MLFLOW_TRACKING_URI": f"file:{store}", "MLFLOW_ALLOW_FILE_STORE": "true"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("WANDB_RUN_ID", raising=False)
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    return store


def wandb_run_ids(job_dir: Path) -> list[str]:
    """The run id of each offline attempt (each attempt's folder holds run-<id>.wandb)."""
    return sorted(p.name[len("run-"):-len(".wandb")] for p in (job_dir / "wandb").glob("offline-run-*/run-*.wandb"))


def mlflow_client(store: Path) -> Any:
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=f"file:{store}")


def attempt(name: str, job_dir: Path, steps: range, group: str | None = None) -> Any:
    from orchestrator.task.trackers import open_sink

    sink = open_sink(name, job_dir=job_dir, run_id=run_id(job_dir), group=group, job_name="toy", config={"lr": 0.1})
    for step in steps:
        sink.scalars({"train/loss": 1.0 / step}, step)
    sink.close("preempted")
    return sink


def test_wandb_offline_two_attempts_one_run(tmp_path: Path, offline: Path) -> None:
    job = tmp_path / "toy-1"
    job.mkdir()
    attempt("wandb", job, range(1, 4))
    attempt("wandb", job, range(4, 7))
    ids = wandb_run_ids(job)
    assert len(ids) == 2 and set(ids) == {run_id(job)}


def test_mlflow_file_store_two_attempts_one_run_with_both_metrics(tmp_path: Path, offline: Path) -> None:
    job = tmp_path / "toy-1"
    job.mkdir()
    first = attempt("mlflow", job, range(1, 4))
    second = attempt("mlflow", job, range(4, 7))
    assert first.run_id == second.run_id
    client = mlflow_client(offline)
    runs = client.search_runs([client.get_experiment_by_name("orch").experiment_id])
    assert [r.info.run_id for r in runs] == [first.run_id]
    history = client.get_metric_history(first.run_id, "train/loss")
    assert sorted(m.step for m in history) == [1, 2, 3, 4, 5, 6]
    assert runs[0].data.params == {"lr": "0.1"}


def test_sweep_elements_share_a_group_and_a_parent_run(tmp_path: Path, offline: Path) -> None:
    array = tmp_path / "toy-sweep"
    array.mkdir()
    (array / "array.json").write_text("{}")
    elements = []
    for index in range(3):
        (array / str(index)).mkdir()
        elements.append(array / str(index))
    group = group_id(elements[0], True)
    assert group == group_id(elements[2], True) == run_id(array)
    sinks = [attempt("mlflow", job, range(1, 3), group) for job in elements]
    client = mlflow_client(offline)
    parents = {client.get_run(s.run_id).data.tags["mlflow.parentRunId"] for s in sinks}
    assert len(parents) == 1 and len({s.run_id for s in sinks}) == 3
    assert client.get_run(parents.pop()).data.tags["orch.run_id"] == group
    wandb_sinks = [attempt("wandb", job, range(1, 3), group) for job in elements]
    assert {s.run.group for s in wandb_sinks} == {group}


@pytest.mark.slow
def test_orch_run_with_both_trackers_continues_one_run_after_preemption(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # this process reads the store too
    store = tmp_path / "mlruns"
    env = clean_environ(WANDB_MODE="offline", WANDB_SILENT="true", MLFLOW_TRACKING_URI=f"file:{store}",
                        MLFLOW_ALLOW_FILE_STORE="true", **wandb_dirs(tmp_path))

    def orch(*args: str) -> dict[str, Any]:
        proc = subprocess.run([ORCH, "run", "--json", *args], capture_output=True, text=True, env=env, timeout=180,
                              check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        data: dict[str, Any] = json.loads(proc.stdout)
        return data

    first = orch(str(FAULTY), "--nproc", "2", "--job-root", str(tmp_path / "jobs"), "--track", "wandb",
                 "--track", "mlflow", "epochs=2", "samples=1001", "log_every=4", "signal_step=45")
    assert first["status"] == "preempted"
    job_dir = Path(first["job_dir"])
    assert json.loads((job_dir / "job.json").read_text())["tracking"] == ["wandb", "mlflow"]
    orch("--resume", str(job_dir), "signal_step=-1")
    ids = wandb_run_ids(job_dir)
    assert len(ids) == 2 and set(ids) == {run_id(job_dir)}
    client = mlflow_client(store)
    [run] = client.search_runs([client.get_experiment_by_name("orch").experiment_id])
    assert run.info.status == "FINISHED" and run.data.tags["orch.run_id"] == run_id(job_dir)
    steps = [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")]
    assert steps == list(range(4, 65, 4))  # both attempts, each step once
