"""Hyperparameters the ranks would refuse (inf, NaN, seeds past 2**64, huge batch sizes) are refused before
sbatch, in ``orch submit`` (and its dry run) and in ``orch run`` before a rank starts; a job default JSON
cannot carry is refused too. Each exits 2 with ``orch: error:`` naming the field, a ``HINT:``, no traceback,
no job folder and no Slurm call.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import TESTS, cluster_file, expect_refused

if TYPE_CHECKING:
    from support import Stubs


# --- what the ranks validate is validated before sbatch --------------------------------------------

PARAM_CASES = [
    (["lr=inf"], "lr"), (["lr=-inf"], "lr"), (["lr=nan"], "lr"), (["lr=1e999"], "lr"), (["momentum=NaN"], "momentum"),
    (["weight_decay=Infinity"], "weight_decay"), ([f"seed={2**64 + 1}"], "seed"), ([f"seed={2**63}"], "seed"),
    (["seed=-1"], "seed"), (["epochs=" + "9" * 5000], "epochs"), ([f"batch_size={2**31}"], "batch_size"),
    (["num_threads=100000"], "num_threads"), ([f"samples={2**64}"], "samples"),
    ([f"max_steps_per_epoch={2**40}"], "max_steps_per_epoch"),
]


@pytest.mark.parametrize(("overrides", "field"), PARAM_CASES, ids=[c[0][0][:30] for c in PARAM_CASES])
@pytest.mark.parametrize("dry_run", [False, True], ids=["submit", "dry-run"])
def test_params_the_ranks_would_refuse_are_refused_before_sbatch(
        overrides: list[str], field: str, dry_run: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        stubs: Stubs) -> None:
    path = cluster_file(tmp_path)
    argv = ["submit", str(TESTS / "jobs" / "hardening_values.py"), "--cluster", str(path), *overrides]
    expect_refused([*argv, "--dry-run"] if dry_run else argv, capsys, [field], jobs=tmp_path / "jobs",
                   stubs=stubs)


@pytest.mark.parametrize("overrides", [["lr=inf"], [f"seed={2**64}"]])
def test_orch_run_refuses_them_too_before_starting_a_rank(overrides: list[str], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    expect_refused(["run", "smoke", "--job-root", str(tmp_path / "jobs"), *overrides], capsys, [],
                   jobs=tmp_path / "jobs")

JOB_WITH_INF_DEFAULT = '''
from orchestrator import JobSpec, TrainParams
class P(TrainParams):
    scale: float = float("inf")
def build(params, ctx):
    raise RuntimeError
SPEC = JobSpec(name="infdefault", params=P, build=build)
'''


def test_a_job_default_that_json_cannot_carry_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         stubs: Stubs) -> None:
    job = tmp_path / "infdefault.py"
    job.write_text(JOB_WITH_INF_DEFAULT, encoding="utf-8")
    expect_refused(["submit", str(job), "--cluster", str(cluster_file(tmp_path)), "--dry-run"], capsys,
                   ["job.json"], jobs=tmp_path / "jobs", stubs=stubs)
