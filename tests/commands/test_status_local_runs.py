"""``orch list`` and ``orch status`` show how a local run (``orch run``) ended, from its job folder's records
(``attempts.json``): COMPLETED, or FAILED with the exit code, for a script and a built-in job alike.
Before this, a local script run read ``UNKNOWN`` (only a ``result.json`` meant COMPLETED), and ``orch
status DIR`` of a local run refused it ("has no job id: it was never queued")."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, ROOT, clean_environ

from orchestrator.records.jobdirs import read_job_dir
from orchestrator.records.restarts.attempts import write_attempts
from orchestrator.slurm.jobstate import describe

SCRIPT = "import sys\nprint('working')\nsys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)\n"


def _env(tmp_path: Path) -> dict[str, str]:
    env = clean_environ(PYTHONPATH=str(ROOT), HOME=str(tmp_path / "home"))
    env.pop("OMP_NUM_THREADS", None)
    return env


def _orch(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, *args], cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True,
                          timeout=180, check=False)


def _run(tmp_path: Path, *args: str) -> Path:
    """``orch run ARGS`` with its own job root; the new job folder."""
    root = tmp_path / "jobs"
    before = set(root.iterdir()) if root.is_dir() else set()
    _orch(tmp_path, "run", "--job-root", str(root), *args)
    [job_dir] = [p for p in set(root.iterdir()) - before if (p / "job.json").is_file()]
    return job_dir


def _status(tmp_path: Path, job_dir: Path) -> dict[str, Any]:
    proc = _orch(tmp_path, "status", str(job_dir), "--json")
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def test_list_and_status_show_how_local_script_runs_ended(tmp_path: Path,
                                                          write_cluster: Callable[..., Path]) -> None:
    write_cluster()  # ./cluster.yaml: launcher.job_root is tmp_path/jobs, where orch list looks
    (tmp_path / "train.py").write_text(SCRIPT)
    done = _run(tmp_path, "train.py", "--nproc", "2", "--cpu")
    failed = _run(tmp_path, "train.py", "--nproc", "2", "--cpu", "--", "3")
    listing = _orch(tmp_path, "list", "--json")
    assert listing.returncode == 0, listing.stderr
    states = {r["job_dir"]: (r["state"], r["exit_code"]) for r in json.loads(listing.stdout)}
    assert states == {str(done): ("COMPLETED", 0), str(failed): ("FAILED", 3)}
    table = _orch(tmp_path, "list").stdout
    assert "UNKNOWN" not in table and "FAILED" in table and "exit code 3" in table and "COMPLETED" in table
    assert (_status(tmp_path, done)["state"], _status(tmp_path, done)["exit_code"]) == ("COMPLETED", 0)
    row = _status(tmp_path, failed)
    assert (row["state"], row["exit_code"], row["reason"], row["terminal"]) == ("FAILED", 3, "exit code 3", True)
    assert row["elapsed"] is not None and row["elapsed"].count(":") == 2
    text = _orch(tmp_path, "status", str(failed)).stdout.splitlines()
    assert text[1].split()[:3] == ["-", "FAILED", "3"], text  # JOBID STATE EXIT


def test_a_failed_local_run_of_a_job_file_reads_failed(tmp_path: Path, write_job: Callable[..., Path]) -> None:
    """A job file runs through the shared entrypoint, as the built-in jobs do; its build raises here.
    (A completed one writes result.json: COMPLETED, as before.)"""
    failed = _run(tmp_path, str(write_job(gpus=0)), "--cpu")
    row = _status(tmp_path, failed)
    assert (row["state"], row["exit_code"], row["reason"]) == ("FAILED", 1, "exit code 1")


@pytest.mark.parametrize(("entries", "restarts", "expected"), [
    ([{"kind": "completed", "exit_code": 0, "requeue": 0, "restarted": False}], 0, ("COMPLETED", 0)),
    ([{"kind": "failed", "exit_code": 1, "requeue": 0, "restarted": False}], 0, ("FAILED", 1)),
    ([{"kind": "vanished", "exit_code": 137, "requeue": 0, "restarted": False}], 0, ("FAILED", 137)),
    ([{"kind": "stopped", "exit_code": 130, "requeue": 0, "restarted": False}], 0, ("CANCELLED", 130)),
    ([{"kind": "preempted", "exit_code": 0, "requeue": 0, "restarted": False}], 0, ("PREEMPTED", 0)),
    # the next attempt runs (a restart), or orch run --resume started a run not recorded yet: not known
    ([{"kind": "failed", "exit_code": 1, "requeue": 0, "restarted": True}], 0, ("UNKNOWN", None)),
    ([{"kind": "preempted", "exit_code": 0, "requeue": 0, "restarted": False}], 1, ("UNKNOWN", None)),
    ([], 0, ("UNKNOWN", None)),
])
def test_the_last_attempt_decides(tmp_path: Path, entries: list[dict[str, Any]], restarts: int,
                                  expected: tuple[str, int | None]) -> None:
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    config = {"mode": "local", "job_name": "x", "job_file": "/x.py", "params": {}, "nodes": 1, "gpus_per_node": 0,
              "tasks_per_node": 1, "cpus_per_task": 1, "job_dir": str(job_dir), "created": "2026-01-01T00:00:00",
              "restarts": restarts}
    (job_dir / "job.json").write_text(json.dumps(config))
    write_attempts(job_dir, [{**e, "attempt": 0, "started": 100.0, "ended": 3761.5} for e in entries])
    row = describe(None, read_job_dir(job_dir), None)
    assert (row["state"], row["exit_code"]) == expected
    if expected[0] != "UNKNOWN":
        assert row["elapsed"] == "01:01:01"


def test_a_local_run_killed_before_it_recorded_anything_stays_unknown(tmp_path: Path) -> None:
    # nothing recorded: no attempts.json, no result.json
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "job.json").write_text(json.dumps({
        "mode": "local", "job_name": "x", "job_file": "/x.py", "params": {}, "nodes": 1, "gpus_per_node": 0,
        "tasks_per_node": 1, "cpus_per_task": 1, "job_dir": str(job_dir), "created": "2026-01-01T00:00:00"}))
    assert describe(None, read_job_dir(job_dir), None)["state"] == "UNKNOWN"
