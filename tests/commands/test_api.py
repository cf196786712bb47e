"""The Python API without Slurm: submitit's local executor and validation before anything runs.

That the API queues orch submit's own script is proven in tests/commands/test_submit_sweep.py (stub sbatch); the
real-cluster side (one job, job arrays, preemption) in tests/e2e/test_e2e_api.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import TESTS

import orchestrator
from orchestrator import api
from orchestrator.errors import ConfigError, OrchError

BROKEN_JOB = """\
from orchestrator import JobSpec, TrainParams


def build(params, ctx):
    raise RuntimeError("boom in build")


SPEC = JobSpec(name="broken", params=TrainParams, build=build)
"""


@pytest.mark.slow
def test_local_executor_runs_every_rank(clean_env: pytest.MonkeyPatch, write_cluster: Callable[..., Path],
                                        tmp_path: Path) -> None:
    write_cluster()  # ./cluster.yaml: job_root is tmp_path/jobs
    handle = orchestrator.submit("smoke", nodes=1, gpus=2, executor="local", epochs=1, samples=128,
                                 test_samples=32)
    assert handle.executor == "local" and handle.job_dir.parent == tmp_path / "jobs"
    result = handle.result(timeout=180)
    assert handle.state == "COMPLETED"
    assert result["world_size"] == 2 and result["in_sync"] is True and result["final"]["epoch"] == 1
    assert "epoch 1/1" in handle.logs(0)
    assert (handle.job_dir / "logs" / "local-rank1.out").is_file()
    cfg = json.loads((handle.job_dir / "job.json").read_text())
    assert (cfg["mode"], cfg["tasks_per_node"], cfg["params"]["samples"]) == ("local", 2, 128)
    assert not (handle.job_dir / "job_id").exists()
    # orch's own verbs read the folder
    out = subprocess.run([sys.executable, "-m", "orchestrator.cli", "logs", str(handle.job_dir)],
                         capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert "epoch 1/1" in out


@pytest.mark.slow
def test_local_executor_failure_names_the_logs(clean_env: pytest.MonkeyPatch,
                                               write_cluster: Callable[..., Path], tmp_path: Path) -> None:
    write_cluster()
    job = tmp_path / "broken.py"
    job.write_text(BROKEN_JOB)
    handle = api.submit(str(job), nodes=1, gpus=1, executor="local")
    with pytest.raises(OrchError, match=r"without a result\.json") as info:
        handle.result(timeout=120)
    assert handle.state == "FAILED"
    assert info.value.hint is not None and "orch logs" in info.value.hint
    assert "boom in build" in handle.logs(0)


def test_bad_overrides_and_executor_fail_before_anything_runs(clean_env: pytest.MonkeyPatch,
                                                              write_cluster: Callable[..., Path],
                                                              tmp_path: Path) -> None:
    write_cluster()
    with pytest.raises(ConfigError, match="unknown override 'epochz'"):
        api.submit("smoke", executor="local", epochz=3)
    with pytest.raises(ConfigError, match="unknown executor"):
        api.submit("smoke", executor="kubernetes")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="sweep is empty"):
        api.sweep("smoke", [], executor="local")
    assert not (tmp_path / "jobs").exists() or not any((tmp_path / "jobs").iterdir())


def test_slurm_executor_needs_a_cluster_file(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="no cluster file"):
        api.submit("smoke", executor="slurm")


def test_slurm_executor_validates_like_orch_submit(clean_env: pytest.MonkeyPatch,
                                                   write_cluster: Callable[..., Path]) -> None:
    path = write_cluster()
    with pytest.raises(ConfigError, match="exceeds gpus_per_node=8"):
        api.submit("smoke", nodes=1, gpus=9, cluster=path, executor="slurm")
    with pytest.raises(ConfigError, match="unknown partition"):
        api.submit("smoke", cluster=path, executor="slurm", partition="nope")


def test_importing_the_api_is_lazy() -> None:
    code = ("import sys, orchestrator\nassert 'orchestrator.api' not in sys.modules\n"
            "orchestrator.submit\nprint(sorted(m for m in ('torch', 'submitit') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_local_mode_and_orch_run_write_the_same_job_json(clean_env: pytest.MonkeyPatch,
                                                         write_cluster: Callable[..., Path], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """One local plan (orchestrator.local.plan): the API's local mode and orch run build job.json alike,
    with a timezone-aware creation time. Nothing runs here: both runners are replaced."""
    import submitit

    from orchestrator.cli import main
    from orchestrator.local.result import LocalResult
    from orchestrator.service import runs

    write_cluster()

    class Queued:
        job_id = "local-1"
        state = "RUNNING"

    class NoRunner:
        def __init__(self, job_dir: Path, **kwargs: Any) -> None:
            self.job_dir = job_dir

        def run(self) -> LocalResult:
            return LocalResult(job_dir=self.job_dir, exit_code=0, status="completed", message="completed")

    clean_env.setattr(submitit.LocalExecutor, "submit", lambda self, fn: Queued())
    clean_env.setattr(runs, "LocalRunner", NoRunner)
    clean_env.setenv("ORCH_DATA_DIR", "data")  # read at the edge, made absolute, written to job.json
    handle = api.submit("smoke", nodes=1, gpus=2, executor="local", epochs=2, lr=0.5)
    assert main(["run", "smoke", "--nproc", "2", "epochs=2", "lr=0.5"]) == 0
    capsys.readouterr()
    (run_dir,) = set((tmp_path / "jobs").iterdir()) - {handle.job_dir}
    configs = [json.loads((d / "job.json").read_text()) for d in (handle.job_dir, run_dir)]
    for cfg, folder in zip(configs, (handle.job_dir, run_dir), strict=True):
        assert cfg.pop("job_dir") == str(folder)
        assert cfg.pop("created")[19:] != ""  # a UTC offset: timezone-aware
        assert cfg["data_dir"] == str(tmp_path / "data")
    assert configs[0] == configs[1]


@pytest.mark.slow
def test_local_executor_runs_a_script_as_orch_run(clean_env: pytest.MonkeyPatch, write_cluster: Callable[..., Path],
                                                  tmp_path: Path) -> None:
    write_cluster()
    out = tmp_path / "out"
    script = TESTS / "scripts" / "ddp_train.py"
    handle = api.submit(str(script), script_args=["--out", str(out), "--steps", "1"], nodes=1, gpus=2,
                        executor="local")
    assert handle.result(timeout=180) == {"state": "COMPLETED"} and handle.state == "COMPLETED"
    records = [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]
    assert [r["env"]["RANK"] for r in records] == ["0", "1"] and records[0]["params"] == records[1]["params"]
    cfg = json.loads((handle.job_dir / "job.json").read_text())
    assert (cfg["mode"], cfg["script"]["args"]) == ("local", ["--out", str(out), "--steps", "1"])


def test_a_handle_asks_the_service_as_the_verbs_do(fake_slurm: Any, tmp_path: Path) -> None:
    """A Slurm job's handle: its status as orch status reads it, and cancel() as orch cancel FOLDER does (asked
    of squeue first: a job that has ended is not given to scancel)."""
    from support import training_job

    folder = training_job(tmp_path / "jobs", "smoke", job_id="12")
    handle = api.JobHandle(job_id="12", job_dir=folder, executor="slurm")
    assert handle.logs(0) == ""  # no log yet
    fake_slurm.set({"squeue": {"stdout": "12|RUNNING|None|node1|0:05|0|smoke\n"}, "scancel": {"stdout": ""}})
    assert handle.state == "RUNNING"
    handle.cancel()
    assert [c for c in fake_slurm.calls() if c[0] == "scancel"] == [["scancel", "12"]]
    fake_slurm.set({"squeue": {"stdout": "12|COMPLETED|None|node1|0:05|0|smoke\n"}, "scancel": {"stdout": ""}})
    handle.cancel()
    assert len([c for c in fake_slurm.calls() if c[0] == "scancel"]) == 1  # ended: nothing sent
