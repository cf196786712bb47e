"""orch list's rows as a service (orchestrator/service/joblist.py), over a Scope and a limit: the rows are what
``orch list --json`` prints of the job root, bounded (``more``; 0: all), with orch status's blame, attempts and
goodput added for orch mcp's list tool; the jobs sent to remote clusters come from the index alone."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support import FakeSlurm, cluster_for, make_job, run_cli

from orchestrator.records.jobindex import Submitted, append_index, now_text
from orchestrator.records.restarts.attempts import write_attempts
from orchestrator.service.joblist import list_table, remote_rows, shown_limit, with_blame
from orchestrator.service.jobs import Scope

DISABLED = {"stdout": "", "stderr": "Slurm accounting storage is disabled\n", "rc": 1}


@pytest.fixture
def root(clean_env: pytest.MonkeyPatch, fake_slurm: FakeSlurm, tmp_path: Path) -> Path:
    """A ./cluster.yaml whose job root holds three jobs Slurm no longer knows (their folders answer)."""
    jobs = tmp_path / "jobs"
    cluster_for(tmp_path, jobs)
    for hour in ("08", "09", "10"):
        make_job(jobs, f"smoke-20261125-{hour}0000-abc123")
    fake_slurm.set({"squeue": {"stdout": ""}, "sacct": DISABLED, "sacct --completion": {"stdout": ""}})
    return jobs


def test_the_rows_are_what_orch_list_json_prints(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli(["list", "--json"], capsys)
    listed = list_table(Scope(), 200)
    assert json.loads(json.dumps(listed.rows, default=str)) == json.loads(out)
    assert [job.path.name[15:17] for job in listed.jobs] == ["10", "09", "08"] and listed.more is False


def test_the_newest_are_shown_and_more_is_said(root: Path) -> None:
    two = list_table(Scope(), 2)
    assert (len(two.rows), two.more, two.limit) == (2, True, 2)
    assert len(list_table(Scope(), 0).rows) == 3 and list_table(Scope(), 0).more is False
    assert shown_limit(10**20) == sys.maxsize - 1 and list_table(Scope(), 10**20).more is False


def test_blame_attempts_and_goodput_come_as_orch_status_reads_them(root: Path) -> None:
    newest = root / "smoke-20261125-100000-abc123"
    write_attempts(newest, [{"attempt": 0, "requeue": 0, "kind": "completed", "exit_code": 0}])
    listed = with_blame(list_table(Scope(), 1))
    (row,) = listed.rows
    assert row["attempts"][0]["kind"] == "completed" and row["restarts_shown"] == "0+0"
    assert row["failure"] is None and row["goodput"] is None and listed.more is True


def test_remote_jobs_come_from_the_index_newest_first_once_each(clean_env: pytest.MonkeyPatch) -> None:
    for job_id in ("5", "5", "6"):
        append_index(Submitted(job_id=job_id, job_dir="/far/jobs/x", submitted=now_text(), job_name="x",
                               cluster="far", remote="/home/me/far.yaml"))
    rows = remote_rows(0)
    assert [(r["job_id"], r["state"], r["job_dir"]) for r in rows] == [("6", "REMOTE", "far:/far/jobs/x"),
                                                                       ("5", "REMOTE", "far:/far/jobs/x")]
    assert len(remote_rows(1)) == 1
