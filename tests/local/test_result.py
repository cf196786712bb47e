"""The result of a local run from what the runner saw: status, exit code, the rank named and its message."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from orchestrator.local.result import last_error, local_result, read_result, tail
from orchestrator.records.joblayout import local_log_name
from orchestrator.spec.runconfig import LOG_DIR, REQUEUE_FILE, RESULT_FILE


def job(tmp_path: Path) -> Path:
    (tmp_path / LOG_DIR).mkdir()
    return tmp_path


def test_the_last_error_a_rank_printed_without_its_prefix() -> None:
    text = "step 1\norch: error: rank 1 failed: first\nmore\norch: error: rank 1: disk full\ndone\n"
    assert last_error(text) == "disk full"
    assert last_error("no error here\n") is None


def test_tail_keeps_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "rank.out"
    log.write_text("".join(f"line {i}\n" for i in range(50)))
    assert tail(log, 3) == "line 47\nline 48\nline 49"


def test_ranks_that_all_exit_zero_completed(tmp_path: Path) -> None:
    job_dir = job(tmp_path)
    (job_dir / RESULT_FILE).write_text(json.dumps({"final": {"loss": 0.5}}))
    result = local_result(job_dir, 2, [0, 0], {0: 1.0, 1: 2.0}, set(), [])
    assert (result.exit_code, result.status, result.message, result.failed_rank) == (0, "completed", "completed",
                                                                                     None)
    assert result.summary()["final"] == {"loss": 0.5}
    assert read_result(job_dir) == {"final": {"loss": 0.5}}


def test_a_requeue_file_means_preempted(tmp_path: Path) -> None:
    job_dir = job(tmp_path)
    (job_dir / REQUEUE_FILE).write_text("")
    result = local_result(job_dir, 1, [0], {0: 1.0}, set(), [])
    assert (result.exit_code, result.status) == (0, "preempted")
    assert f"orch run --resume {job_dir}" in result.message


def test_a_forwarded_signal_is_an_interruption_with_the_shells_code(tmp_path: Path) -> None:
    result = local_result(job(tmp_path), 2, [0, 0], {0: 1.0, 1: 1.0}, set(), [signal.SIGTERM, signal.SIGINT])
    assert (result.exit_code, result.status, result.message) == (143, "interrupted", "interrupted")


def test_a_failed_rank_is_named_with_its_last_error(tmp_path: Path) -> None:
    job_dir = job(tmp_path)
    (job_dir / LOG_DIR / local_log_name(1)).write_text("orch: error: rank 1: out of memory\n")
    result = local_result(job_dir, 2, [0, 3], {0: 1.0, 1: 2.0}, set(), [])
    assert (result.exit_code, result.status, result.failed_rank) == (3, "failed", 1)
    assert "out of memory" in result.message
    assert result.failure is not None and result.rank_codes == [0, 3]
