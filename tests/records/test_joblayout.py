"""The job folder's names: the folder, its logs and records, an array's elements, and where folders live."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from orchestrator.records.joblayout import (
    STAMP_RE,
    element_dir,
    error_file_path,
    folder_name,
    job_dir_path,
    job_root,
    log_path,
    outcome_path,
    outcome_rank,
)
from orchestrator.spec.cluster import Launcher


def test_a_folder_name_is_the_safe_job_name_a_utc_stamp_and_a_token(tmp_path: Path) -> None:
    path = job_dir_path(tmp_path, "my job/../x", datetime(2026, 1, 2, 3, 4, 5), "ab12")
    assert path == tmp_path / "my_job_.._x-20260102-030405-ab12"
    match = STAMP_RE.search(path.name)
    assert match is not None and match.groups() == ("20260102", "030405")
    assert folder_name("../..") == "job" and len(folder_name("a" * 100)) == 64


def test_logs_of_a_local_run_and_of_slurm_ranks(tmp_path: Path) -> None:
    assert log_path(tmp_path, None) == tmp_path / "logs" / "local-rank0.out"
    assert log_path(tmp_path, None, 3) == tmp_path / "logs" / "local-rank3.out"
    assert log_path(tmp_path, "123_4") == tmp_path / "logs" / "slurm-123_4.out"
    assert log_path(tmp_path, "123", 2) == tmp_path / "logs" / "123-rank2.out"


def test_records_of_a_rank_and_their_names_read_back(tmp_path: Path) -> None:
    assert outcome_path(tmp_path, 7).name == "rank7.outcome.json"
    assert error_file_path(tmp_path, 7) == tmp_path / "logs" / "rank7.error.json"
    assert outcome_rank("rank7.outcome.json") == 7
    assert outcome_rank("rank7.outcome.json.tmp") is None and outcome_rank("rankx.outcome.json") is None


def test_array_elements_and_the_job_root(tmp_path: Path) -> None:
    assert element_dir(tmp_path, 3) == tmp_path / "3"
    assert job_root(None) == Path(Launcher().job_root).expanduser()
