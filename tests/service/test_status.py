"""orch status's reading as a service (orchestrator/service/status.py), called over a Scope and plain job refs as
orch mcp calls it: the rows are the objects ``orch status --json`` prints, one job named carries its start-up,
snapshot and working directory, the attempts' lines are orch status JOB's. Against stand-in Slurm clients
(tests/support/standins.py's FakeSlurm); orch status's own output is tested through the CLI in tests/commands/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import CANNED_JOB_ID, FakeSlurm, cluster_for, make_job, run_cli

from orchestrator.records.restarts.attempts import write_attempts
from orchestrator.service.jobs import Scope
from orchestrator.service.status import attempt_lines, startup_text, status_table, targets

DISABLED = {"stdout": "", "stderr": "Slurm accounting storage is disabled\n", "rc": 1}
LEDGER = {"allocated_s": 100.0, "train_s": 80.0, "recovery_s": 0.0, "goodput": 0.8}


@pytest.fixture
def root(clean_env: pytest.MonkeyPatch, fake_slurm: FakeSlurm, tmp_path: Path) -> Path:
    """A ./cluster.yaml whose job root holds one finished job (the canned id) and one refused by sbatch."""
    jobs = tmp_path / "jobs"
    cluster_for(tmp_path, jobs)
    make_job(jobs)
    (make_job(jobs, "refused-20261125-090000-abc123") / "job_id").unlink()
    fake_slurm.set({"squeue": {"stdout": ""}, "sacct": DISABLED,
                    "sacct --completion": {"stdout": f"{CANNED_JOB_ID}|COMPLETED|0:0|node1|00:00:09|smoke\n"}})
    return jobs


def test_the_rows_are_what_orch_status_json_prints(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli(["status", "--json"], capsys)
    found = status_table([], Scope())
    assert json.loads(json.dumps(found.rows, default=str)) == json.loads(out)
    assert [row["job_id"] for row in found.rows] == [CANNED_JOB_ID] and found.one is False  # no id: not listed
    assert found.rows[0]["state"] == "COMPLETED" and found.rows[0]["metrics"] == "test_loss 0.4"
    _, out, _ = run_cli(["status", CANNED_JOB_ID, "--json"], capsys)
    one = status_table([CANNED_JOB_ID], Scope())
    assert one.one is True and json.loads(json.dumps(one.rows[0], default=str)) == json.loads(out)


def test_one_job_named_carries_its_startup_and_the_lines_under_the_table(root: Path) -> None:
    folder = root / "smoke-20261125-100000-abc123"
    (folder / "result.json").write_text(json.dumps({"startup": {"imports": 1.5, "rendezvous": "x"},
                                                    "goodput": LEDGER}))
    write_attempts(folder, [{"attempt": 0, "requeue": 0, "kind": "completed", "exit_code": 0}])
    found = status_table([str(folder)], Scope())
    (row,) = found.rows
    assert found.one and row["startup"] == {"imports": 1.5} and row["goodput"] == LEDGER  # a non-number left out
    assert found.snapshot is None and "snapshot" not in row and "workdir" not in row  # a job file, no snapshot
    assert startup_text(row["startup"]).splitlines()[:2] == ["startup (rank 0):",
                                                             "  imports                   1.500s  100.0%"]
    lines = attempt_lines(row)
    assert len(lines) == 2 and "completed" in lines[0] and lines[1].startswith("goodput")
    assert status_table([], Scope(), limit=5).one is False  # without refs: never one, however many


def test_targets_keep_an_id_no_folder_holds(root: Path) -> None:
    found, followed = targets(["77", CANNED_JOB_ID], Scope())
    assert [(job_id, job is not None) for job_id, job in found] == [("77", False), (CANNED_JOB_ID, True)]
    assert followed == [None, None]
    assert targets([], Scope(), limit=0) == ([], [])
