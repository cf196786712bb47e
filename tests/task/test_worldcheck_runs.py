"""The world check for real: ``orch run SCRIPT --nproc 2`` (2 gloo ranks on the CPU) through the CLI, one run per
case: a formed world, ranks that each trained alone (a hard-coded tcp:// rendezvous with world_size=1), ranks that
never called init_process_group, a correct script with subgroups, ranks declared independent, and the strict
check (--strict-world, cluster.yaml's launcher.world_check); orch status on what they left.

Two runs serve two tests each: the formed world is tests/local/sharedlocal.py's run of ddp_train.py (made once per
session, read by other modules too), and ranks that never initialised are one run of no_init.py that also sleeps
past launcher.init_timeout (``never_initialised``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import sharedruns
from local import sharedlocal
from support import ORCH, ROOT, TEST_CLUSTER, clean_environ, cluster_file

pytestmark = pytest.mark.slow

SCRIPTS = ROOT / "tests" / "scripts"
TIMEOUT = 180
NEVER_FORMED = "the 2 ranks never formed a process group: 2 independent copies trained"
NEVER_INITIALISED = "none of the 2 ranks called init_process_group: 2 independent copies trained"


def orch(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_environ(PYTHONPATH=str(ROOT))
    return subprocess.run([ORCH, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT,
                          check=False)


def run(tmp_path: Path, script: str, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``orch run SCRIPT --nproc 2 --cpu ARGS``; the process and its job folder."""
    jobs = tmp_path / "jobs"
    proc = orch(tmp_path, "run", str(SCRIPTS / script), "--nproc", "2", "--cpu", "--job-root", str(jobs), *args)
    [job_dir] = [p for p in jobs.iterdir() if (p / "job.json").is_file()]
    return proc, job_dir


def worlds(job_dir: Path) -> list[Any]:
    return [json.loads((job_dir / "logs" / f"rank{r}.outcome.json").read_text(encoding="utf-8")).get("world")
            for r in range(2)]


def status(tmp_path: Path, job_dir: Path) -> tuple[str, dict[str, Any]]:
    text = orch(tmp_path, "status", str(job_dir))
    data = orch(tmp_path, "status", str(job_dir), "--json")
    assert text.returncode == data.returncode == 0, text.stderr + data.stderr
    return text.stdout, json.loads(data.stdout)


def test_a_formed_world_raises_no_alarm(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    # ``orch run ddp_train.py --nproc 2 --cpu --json`` (sharedlocal.ddp_train: from another directory, with
    # arguments of its own after the script's)
    made = sharedlocal.ddp_train(tmp_path_factory)
    proc = made["proc"]
    job_dir = sharedlocal.job_dir_under(made["folder"] / "jobs")
    stderr = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, stderr
    assert "warning" not in stderr, stderr
    assert json.loads(proc.stdout)["world"] is None
    assert worlds(job_dir) == [{"size": 2, "rank": r, "backend": "gloo", "orch_rendezvous": True} for r in range(2)]
    text, data = status(tmp_path, job_dir)
    assert data["state"] == "COMPLETED" and data["world"] is None and "warning" not in text


def test_ranks_that_each_trained_alone_are_reported(tmp_path: Path) -> None:
    proc, job_dir = run(tmp_path, "alone.py")
    assert proc.returncode == 0, proc.stderr  # a warning by default: the run completed
    last = proc.stderr.strip().splitlines()
    assert last[-2].startswith(f"orch: warning: {NEVER_FORMED} (ranks 0, 1 initialised a world of 1 rank (gloo) "
                               "not at orch's rendezvous"), proc.stderr
    assert last[-1].startswith("HINT: ") and "--independent-ranks" in last[-1]
    # rank 0 said so at once, while it ran
    assert "orch: warning: rank 0: the job's 2 ranks never formed a process group" in proc.stdout + proc.stderr
    assert worlds(job_dir) == [{"size": 1, "rank": 0, "backend": "gloo", "orch_rendezvous": False}] * 2
    text, data = status(tmp_path, job_dir)
    assert data["state"] == "COMPLETED" and data["failure"] is None
    assert data["world"]["kind"] == "never_formed" and data["world"]["ranks"] == [0, 1]
    assert f"# job {job_dir}: warning: {NEVER_FORMED}" in text


@pytest.fixture
def never_initialised(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``orch run no_init.py --nproc 2 --cpu --json`` with launcher.init_timeout 10 and ranks that sleep 12 s before
    they end without a process group: made once per session, read by the two tests of ranks that never
    initialised (rank 0's word while it runs; the verdict at the end, which the sleep does not change)."""
    def make(folder: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
        cluster = cluster_file(folder, launcher={**TEST_CLUSTER["launcher"], "init_timeout": 10})
        return run(folder, "no_init.py", "--json", "--cluster", str(cluster), "--", "--sleep", "12")

    return sharedruns.once(tmp_path_factory, "worldcheck-no-init-slept", make)


def test_ranks_that_never_initialised_are_reported(
        tmp_path: Path, never_initialised: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    proc, job_dir = never_initialised
    assert proc.returncode == 0, proc.stderr
    assert f"orch: warning: {NEVER_INITIALISED}\nHINT: call init_process_group" in proc.stderr
    assert json.loads(proc.stdout)["world"]["kind"] == "never_initialised"
    assert worlds(job_dir) == [{}, {}]  # watched, never joined
    text, data = status(tmp_path, job_dir)
    assert data["world"]["kind"] == "never_initialised" and NEVER_INITIALISED in text


def test_a_correct_script_with_subgroups_raises_no_alarm(tmp_path: Path) -> None:
    proc, job_dir = run(tmp_path, "subgroups.py")
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stdout + proc.stderr
    assert [w["size"] for w in worlds(job_dir)] == [2, 2]  # new_group is no join


def test_ranks_meant_to_be_independent_are_left_alone(tmp_path: Path) -> None:
    proc, job_dir = run(tmp_path, "no_init.py", "--independent-ranks")
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stdout + proc.stderr
    assert json.loads((job_dir / "job.json").read_text(encoding="utf-8"))["launcher"]["world_check"] == "independent"
    assert worlds(job_dir) == [None, None]
    text, data = status(tmp_path, job_dir)
    assert data["world"] is None and "warning" not in text


def test_strict_world_fails_ranks_that_each_trained_alone(tmp_path: Path) -> None:
    proc, job_dir = run(tmp_path, "alone.py", "--strict-world")
    assert proc.returncode == 2, proc.stderr
    assert "orch: error: rank " in proc.stderr
    # the failed rank's own line (rank 0's on stdout) says it; the closing line does not repeat it
    assert "the job's 2 ranks never formed a process group: this rank initialised a world of 1 rank" in (
        proc.stdout + proc.stderr)
    text, data = status(tmp_path, job_dir)
    assert data["state"] == "FAILED" and "never formed a process group" in data["failure"]["message"]
    assert data["world"] is None and "warning" not in text  # the failure says it, once


def test_cluster_yaml_makes_the_check_strict(tmp_path: Path) -> None:
    cluster = cluster_file(tmp_path, launcher={**TEST_CLUSTER["launcher"], "world_check": "strict"})
    proc, _ = run(tmp_path, "no_init.py", "--cluster", str(cluster))
    assert proc.returncode == 2, proc.stderr
    assert "never formed a process group: this rank never called init_process_group" in proc.stderr


def test_rank_0_says_so_while_it_runs_when_no_init_came_in_time(
        never_initialised: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    proc, _ = never_initialised
    assert proc.returncode == 0, proc.stderr
    assert ("orch: warning: rank 0 has not called init_process_group 10 s into the script (launcher.init_timeout)"
            in proc.stdout + proc.stderr)
    assert NEVER_INITIALISED in proc.stderr
