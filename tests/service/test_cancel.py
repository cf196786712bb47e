"""The service that cancels or signals jobs (orchestrator/service/cancel.py), called as orch top and orch mcp
call it: over a Scope and plain ids, against stand-in Slurm clients (tests/support/standins.py's FakeSlurm). orch
cancel's own output is tested through the CLI in tests/commands/test_status_logs.py and test_logs_script_jobs.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import FakeSlurm

from orchestrator.errors import SlurmError
from orchestrator.service.cancel import cancel, unknown_error, whole
from orchestrator.service.jobs import Scope
from orchestrator.slurm.state import JobStatus


@pytest.fixture
def scope(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> Scope:
    """A named cluster file whose job root is empty: ids are Slurm's alone."""
    (tmp_path / "jobs").mkdir()
    path = tmp_path / "c.yaml"
    path.write_text("name: t\npartitions:\n  - {name: debug, nodes: 'node[1-2]', gpus_per_node: 8, cpus_per_node: 4, "
                    f"mem_per_node: 4096}}\nlauncher:\n  job_root: {tmp_path / 'jobs'}\n")
    return Scope(str(path))


def test_only_live_jobs_are_given_to_scancel(fake_slurm: FakeSlurm, scope: Scope) -> None:
    fake_slurm.set({"squeue": {"stdout": "5|RUNNING|None|node1|0:05|0|a\n6|COMPLETED|None|node1|0:01|0|b\n"},
                    "scancel": {"stdout": ""}})
    done = cancel(["5", "6", "7"], scope)
    assert done == {"acted": ["5"], "action": "cancel", "finished": {"6": "COMPLETED"}, "unknown": ["7"]}
    assert [c for c in fake_slurm.calls() if c[0] == "scancel"] == [["scancel", "5"]]


def test_a_signal_goes_to_every_task(fake_slurm: FakeSlurm, scope: Scope) -> None:
    fake_slurm.set({"squeue": {"stdout": "9|RUNNING|None|node1|0:05|0|a\n"}, "scancel": {"stdout": ""}})
    assert cancel(["9"], scope, "USR2")["action"] == "signal"
    assert ["scancel", "--signal=USR2", "--full", "9"] in fake_slurm.calls()


def test_nothing_is_sent_when_no_job_is_live(fake_slurm: FakeSlurm, scope: Scope) -> None:
    fake_slurm.set({"squeue": {"stdout": ""}})
    assert cancel(["3"], scope)["unknown"] == ["3"]
    assert not [c for c in fake_slurm.calls() if c[0] == "scancel"]


def _status(job_id: str, state: str) -> JobStatus:
    return JobStatus(job_id=job_id, state=state, source="squeue")


def test_an_arrays_id_is_live_while_any_element_is() -> None:
    found = {"40_0": _status("40_0", "COMPLETED"), "40_[1-3%1]": _status("40_[1-3%1]", "PENDING"),
             "400_0": _status("400_0", "RUNNING")}
    answer = whole("40", found)
    assert answer is not None and answer.state == "PENDING"
    assert whole("4", found) is None  # 40_0 and 400_0 are not elements of job 4
    assert whole("40_0", found) == found["40_0"]
    ended = whole("40", {"40_0": _status("40_0", "COMPLETED")})
    assert ended is not None and ended.terminal


def test_the_unknown_ids_error_names_them_all() -> None:
    error = unknown_error(["7", "8"])
    assert isinstance(error, SlurmError)
    assert error.message == "Slurm does not know jobs 7, 8" and error.hint is not None and "orch list" in error.hint
    assert unknown_error(["7"]).message == "Slurm does not know job 7"
