"""orch logs's reading as a service (orchestrator/service/logs.py), over a Scope and plain values: the view a call
asks for and its refusals, when the job has ended (the tense of a note; when following stops, and why), the notes on
an empty or absent log, and the bounded tails of orch mcp's logs tool. Against stand-in Slurm clients
(tests/support/standins.py's FakeSlurm); orch logs's own output is tested through the CLI in tests/commands/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import CANNED_JOB_ID, FakeSlurm, cluster_for, make_job

from orchestrator.errors import ConfigError, OrchError
from orchestrator.records.jobdirs import read_job_dir
from orchestrator.service.jobs import Scope
from orchestrator.service.logs import (
    check_interval,
    finished,
    follow_ended,
    make_view,
    missing_error,
    nothing_notes,
    open_logs,
    tails,
)

DOWN = {"stdout": "", "rc": 1,
        "stderr": "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"}
RUNNING = {"stdout": f"{CANNED_JOB_ID}|RUNNING|None|node1|0:30|0|smoke\n"}


@pytest.fixture
def job(clean_env: pytest.MonkeyPatch, fake_slurm: FakeSlurm, tmp_path: Path) -> Path:
    """A ./cluster.yaml whose job root holds one Slurm job (the canned id) with a batch log and rank 0's."""
    cluster_for(tmp_path, tmp_path / "jobs")
    return make_job(tmp_path / "jobs")


@pytest.mark.parametrize(("values", "words"), [
    ({"lines": -1}, "--lines -1 must be 0 or more"),
    ({"rank": -2}, "--rank -2 must be 0 or more"),
])
def test_a_view_refuses_what_cannot_be_shown(job: Path, values: dict[str, int], words: str) -> None:
    with pytest.raises(OrchError, match=words) as refused:
        make_view(read_job_dir(job), **values)  # type: ignore[arg-type]
    assert refused.value.hint


def test_a_local_run_has_no_batch_log(job: Path) -> None:
    config = json.loads((job / "job.json").read_text())
    (job / "job.json").write_text(json.dumps({**config, "mode": "local"}))
    with pytest.raises(OrchError, match=r"is a local run \(orch run\): it has no batch log"):
        make_view(read_job_dir(job), batch=True)


def test_an_interval_out_of_bounds_is_refused_first() -> None:
    with pytest.raises(ConfigError, match=r"--interval 0\.0 "):
        check_interval(0.0)
    check_interval(0.5)


def test_open_logs_finds_the_job_by_id_and_names_its_view(job: Path) -> None:
    logs = open_logs(CANNED_JOB_ID, Scope(), rank=0, lines=5)
    assert logs.job.path == job and logs.followed is None and logs.cluster() is None  # ./cluster.yaml: not chosen
    assert (logs.view.mode, logs.view.lines, logs.shown_rank()) == ("rank", 5, 0)
    assert [s.path.name for s in logs.present()] == [f"{CANNED_JOB_ID}-rank0.out"]
    assert open_logs(str(job), Scope(), batch=True).shown_rank() is None
    assert open_logs(str(job), Scope(), all_ranks=True).shown_rank() == -1


def test_when_a_slurm_job_has_ended(job: Path, fake_slurm: FakeSlurm) -> None:
    folder = read_job_dir(job)
    fake_slurm.set({"squeue": RUNNING})
    assert follow_ended(folder, None) == (False, None) and finished(folder, None) is False
    fake_slurm.set({"squeue": {"stdout": ""}})  # Slurm forgot it: over
    assert follow_ended(folder, None) == (True, None) and finished(folder, None) is True
    fake_slurm.set({"squeue": DOWN})  # a slow controller is no reason to stop following
    assert follow_ended(folder, None) == (False, None) and finished(folder, None) is False


def test_the_notes_on_an_empty_log_are_in_the_tense_of_the_job(job: Path) -> None:
    (job / "logs" / f"{CANNED_JOB_ID}-rank0.out").write_text("")
    (job / "progress.json").write_text(json.dumps({"epoch": 1, "epochs": 2, "step": 3, "steps": 9, "loss": 0.5}))
    view = make_view(read_job_dir(job))
    running = nothing_notes(view, 0, ended=False)
    assert running[0] == "orch: rank 0 has written nothing yet"
    assert running[1].startswith("orch: rank 0 is at epoch 1/2")
    assert nothing_notes(view, 0, ended=True) == ["orch: rank 0 wrote nothing (its log is empty)"]
    (job / "logs" / f"{CANNED_JOB_ID}-rank0.out").unlink()
    assert nothing_notes(view, 3, ended=True) == [
        f"orch: rank 0's log {job / 'logs' / f'{CANNED_JOB_ID}-rank0.out'} does not exist"]
    assert "does not exist yet" in missing_error(view).message
    assert "ended without it" in missing_error(view, ended=True).message


def test_tails_are_bounded_per_log(job: Path) -> None:
    (job / "logs" / f"{CANNED_JOB_ID}-rank0.out").write_text("".join(f"line {i}\n" for i in range(50)))
    got = tails(CANNED_JOB_ID, Scope(), lines=3)
    assert [(entry["source"], entry["truncated"]) for entry in got["logs"]] == [("batch", False), ("rank 0", True)]
    assert got["logs"][1]["lines"] == ["line 47", "line 48", "line 49"] and got["failure"] is None
    assert got["job_id"] == CANNED_JOB_ID and got["more_ranks_from"] is None
    (job / "logs" / f"{CANNED_JOB_ID}-rank1.out").write_text("one\n")
    paged = tails(CANNED_JOB_ID, Scope(), all_ranks=True, max_ranks=1)
    assert [entry["source"] for entry in paged["logs"]] == ["rank 0"] and paged["more_ranks_from"] == 1
