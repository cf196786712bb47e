"""``orch run --nproc``: at most :func:`max_local_ranks` (4 per core, at least 8, at most 1024), refused before a
single process starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import refused

from orchestrator.errors import ConfigError
from orchestrator.local.plan import check_nproc
from orchestrator.spec.numbers import (
    MAX_LOCAL_RANKS,
    MIN_LOCAL_RANK_LIMIT,
    max_local_ranks,
)

# -- --nproc -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("cpus, limit", [(1, 8), (2, 8), (3, 12), (16, 64), (255, 1020), (256, 1024), (10_000, 1024)])
def test_the_local_rank_limit(cpus: int, limit: int) -> None:
    assert max_local_ranks(cpus) == limit
    check_nproc(limit, cpus)
    with pytest.raises(ConfigError, match="more than this machine can run"):
        check_nproc(limit + 1, cpus)
    assert MIN_LOCAL_RANK_LIMIT <= limit <= MAX_LOCAL_RANKS


@pytest.mark.parametrize("value", ["100000", "1025", "99999999999999999999", "123456789012345678901234567890"])
def test_orch_run_refuses_too_many_ranks_before_anything_starts(value: str, tmp_path: Path, clean_env: Any,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    jobs = tmp_path / "jobs"
    err = refused(["run", "smoke", "--nproc", value, "--job-root", str(jobs)], capsys, "--nproc")
    assert "at most" in err
    assert not jobs.exists()  # no folder, no process


# -- the launcher settings orch run takes as flags ---------------------------------------------------

@pytest.mark.parametrize(("flag", "value"), [("--collective-timeout", "1"), ("--collective-timeout", "9999999"),
                                             ("--max-restarts", "-1")])
def test_orch_run_refuses_a_launcher_flag_out_of_its_bound_before_anything_starts(
        flag: str, value: str, tmp_path: Path, clean_env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    jobs = tmp_path / "jobs"
    err = refused(["run", "smoke", flag, value, "--job-root", str(jobs)], capsys, flag)
    assert "at least" in err or "at most" in err
    assert not jobs.exists()  # no folder, no process, no traceback
