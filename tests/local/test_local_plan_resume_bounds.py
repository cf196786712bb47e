"""``orch run --resume`` of a job folder whose job.json holds numbers the ranks cannot use is refused as
``orch run`` would refuse them, before any rank starts: exit 2, the job.json field named, a HINT, no rank
started, nothing written into the folder (the real CLI on a copy of a finished local run).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import assert_refused, resume

pytestmark = pytest.mark.slow

# (field, value, what the error must name): the shared bounds of spec/bounds.py, and orch run's rank limit
OUT_OF_BOUNDS = [
    ("cpus_per_task", 10**9, "cpus_per_task"),
    ("cpus_per_task", 0, "cpus_per_task"),
    ("tasks_per_node", 3_000_000, "tasks_per_node"),
    ("tasks_per_node", 4000, "tasks_per_node"),  # a count Slurm holds, but far more ranks than orch run starts
    ("gpus_per_task", 10**6, "gpus_per_task"),
    ("nodes", 10**12, "nodes"),
]


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("field", "value", "named"), OUT_OF_BOUNDS,
                         ids=[f"{f}={v}" for f, v, _ in OUT_OF_BOUNDS])
def test_resume_refuses_job_json_out_of_bounds_before_any_rank(job_copy: Path, field: str, value: int,
                                                                named: str) -> None:
    cfg = json.loads((job_copy / "job.json").read_text())
    cfg[field] = value
    (job_copy / "job.json").write_text(json.dumps(cfg))
    before = listing(job_copy)
    proc = resume(job_copy)
    assert_refused(proc, "job.json", named)
    assert listing(job_copy) == before, "a refused resume wrote into the folder (or started a rank)"
