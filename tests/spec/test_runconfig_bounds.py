"""job.json's ``restarts`` and ``time`` are bounded as the other numbers a run hands on (spec/bounds.py): a
hand-edited value is refused when job.json is read, naming the field, and ``orch run --resume`` of such a
folder stops before any rank starts, writing nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import assert_refused, resume

from orchestrator.errors import ConfigError
from orchestrator.spec.runconfig import RunConfig, read_run_config

BASE = {"mode": "local", "job_name": "tiny", "job_file": "/x/tiny.py", "params": {}, "nodes": 1,
        "gpus_per_node": 0, "tasks_per_node": 1, "cpus_per_task": 1, "job_dir": "/x/jobs/tiny",
        "created": "2026-11-30T08:15:00+00:00"}

# (field, value the ranks cannot use): an absurd resume count, times Slurm cannot read or beyond the bound
REFUSED = [("restarts", 10**30), ("restarts", -3), ("restarts", 1_000_001),
           ("time", "soon-ish"), ("time", "99999999999"), ("time", "0"), ("time", "3:61:00")]


@pytest.mark.parametrize(("field", "value"), REFUSED, ids=[f"{f}={v}" for f, v in REFUSED])
def test_job_json_out_of_bounds_is_refused_naming_the_field(tmp_path: Path, field: str, value: object) -> None:
    (tmp_path / "job.json").write_text(json.dumps({**BASE, field: value}))
    with pytest.raises(ConfigError) as caught:
        read_run_config(tmp_path)
    assert f"{field}:" in caught.value.message and "job.json" in caught.value.message
    assert caught.value.hint


@pytest.mark.parametrize(("field", "value"), [("restarts", 0), ("restarts", 7), ("time", None), ("time", "2-06:30:00"),
                                              ("time", "UNLIMITED"), ("time", "45")])
def test_job_json_within_bounds_is_read(field: str, value: object) -> None:
    assert getattr(RunConfig.model_validate({**BASE, field: value}), field) == value


@pytest.mark.slow
@pytest.mark.parametrize(("field", "value"), [("restarts", 10**30), ("time", "next tuesday")])
def test_resume_refuses_a_hand_edited_restarts_or_time_before_any_rank(job_copy: Path, field: str,
                                                                       value: object) -> None:
    cfg = json.loads((job_copy / "job.json").read_text())
    cfg[field] = value
    (job_copy / "job.json").write_text(json.dumps(cfg))
    before = {str(p): p.stat().st_mtime_ns for p in job_copy.rglob("*") if p.is_file()}
    proc = resume(job_copy)
    assert_refused(proc, "job.json", field)
    assert {str(p): p.stat().st_mtime_ns for p in job_copy.rglob("*") if p.is_file()} == before
