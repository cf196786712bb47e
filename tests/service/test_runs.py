"""orch run's service (orchestrator/service/runs.py) over plain values: the error said once, the trackers checked
before a folder exists, --nproc and --pass-env refused before anything is written, and two real local ranks
through opened() and run_local(). Real runs through the CLI: tests/local/ (test_runner.py and the rest)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from orchestrator.errors import ConfigError
from orchestrator.service.runs import RunRequest, check_nproc, checked_tracking, opened, run_local, said_once


def test_the_closing_line_leaves_out_a_cause_shown_above() -> None:
    shown = "Traceback ...\norch: error: rank 1 failed: ValueError: x (job j)\nHINT: the traceback above"
    message = "rank 1 exited with code 1 (ValueError: x (job j)); then: rank 0 was killed by SIGTERM"
    once = "rank 1 exited with code 1 (its error is above); then: rank 0 was killed by SIGTERM"
    assert said_once(message, shown) == once
    assert said_once(message, "Traceback ...\nValueError: x") == message  # a script's traceback: said in full
    assert said_once(message, "") == message


def test_a_tracker_whose_package_is_missing_is_refused_by_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)  # find_spec answers None, as when it is not installed
    with pytest.raises(ConfigError) as caught:
        checked_tracking(None, ["mlflow"])
    assert "needs the mlflow package" in caught.value.message and "orch[mlflow]" in (caught.value.hint or "")
    assert checked_tracking(None, []) == []


def test_nproc_out_of_bounds_is_refused_and_none_is_the_jobs_own() -> None:
    check_nproc(None)
    check_nproc(1)
    with pytest.raises(ConfigError, match="--nproc 0 must be at least 1"):
        check_nproc(0)


def test_an_unset_pass_env_name_is_refused_before_a_folder_exists(clean_env: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    clean_env.delenv("ORCH_TEST_UNSET", raising=False)
    request = RunRequest(job="smoke", pass_env=["ORCH_TEST_UNSET"], job_root=str(tmp_path / "jobs"))
    with pytest.raises(ConfigError) as caught, opened(request, sys.stdout):
        pass
    assert "--pass-env: ORCH_TEST_UNSET not set in this shell" in caught.value.message
    assert not (tmp_path / "jobs").exists()


@pytest.mark.slow
@pytest.mark.parametrize(("failing", "status"), [(None, "completed"), (1, "failed")])
def test_a_script_run_through_the_service_says_how_it_ended(failing: int | None, status: str,
                                                           clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Two real local ranks of a plain script (no torch): the outcome names a failed rank's log and its last
    lines; the ranks' output went to the stream the caller gave."""
    script = tmp_path / "ranks.py"
    said = tmp_path / "said"  # each rank leaves a mark once its line is out: the failing rank waits for the other's,
    # so its failure cannot stop the other rank before that rank has said anything
    script.write_text("import os, sys, time\nrank = int(os.environ['RANK'])\nprint('hello from', rank, flush=True)\n"
                      f"open({str(said)!r} + str(rank), 'w').close()\n"
                      f"while rank == {failing} and not os.path.exists({str(said)!r} + str(1 - rank)):\n"
                      "    time.sleep(0.05)\n"
                      f"sys.exit(3 if rank == {failing} else 0)\n")
    request = RunRequest(job=str(script), script_args=[], nproc=2, cpu=True, no_check=True,
                         job_root=str(tmp_path / "jobs"), all_ranks=True)
    out = io.StringIO()
    with opened(request, out) as (job_dir, cfg):
        assert cfg.tasks_per_node == 2 and job_dir.parent == tmp_path / "jobs"
        outcome = run_local(request, job_dir, cfg, out)
    assert (outcome.status, outcome.job_dir, outcome.summary["status"]) == (status, job_dir, status)
    assert "hello from 0" in out.getvalue() and "hello from 1" in out.getvalue()
    if failing is None:
        assert outcome.exit_code == 0 and outcome.failed_log is None
        return
    assert outcome.exit_code != 0 and outcome.failed_rank == failing
    assert outcome.failed_log == job_dir / "logs" / f"local-rank{failing}.out"
    assert f"hello from {failing}" in outcome.last_lines
