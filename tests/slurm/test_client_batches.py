"""Every Slurm query with many ids is cut into batches bounded by argument length, and every id still gets an
answer (squeue, sacct, scontrol, scancel and the completion log); an empty scontrol answer leaves squeue's status.

The Slurm clients are stand-ins first on PATH (real subprocesses, as the CLI runs them): they answer
every id they are asked about and record the size of each command line they were given.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from support import assert_bounded

from orchestrator.slurm import client, queries


@pytest.mark.parametrize("ids", [
    [str(1_000_000 + i) for i in range(20_000)],  # 7-digit ids, as a busy cluster has them
    [f"{4_000_000_000 + i}_{i % 50}" for i in range(12_000)],  # long array element ids
])
def test_job_status_of_many_ids_is_batched_and_answers_every_id(scale_slurm: Path, ids: list[str]) -> None:
    found = queries.job_status(ids, details=False)
    assert set(found) == set(ids)
    for job_id, status in found.items():
        number = int(job_id.split("_")[0])
        want = "RUNNING" if number % 3 == 0 else "FAILED" if job_id.endswith("7") else "COMPLETED"
        assert status.state == want, job_id
    asked = assert_bounded(scale_slurm, "squeue")
    assert sum(c["ids"] for c in asked) == len(ids)  # each id once, in as many calls as the bound needs
    assert len(asked) >= 2
    settled = [i for i in ids if int(i.split("_")[0]) % 3 != 0]
    assert sum(c["ids"] for c in assert_bounded(scale_slurm, "sacct")) == len(settled)


def test_completion_log_and_scancel_are_batched_too(scale_slurm: Path) -> None:
    ids = [str(90_000_000 + i) for i in range(15_000)]
    assert set(queries.jobcomp(ids)) == set(ids)
    client.scancel(ids)
    canceled = assert_bounded(scale_slurm, "scancel")
    assert sum(c["ids"] for c in canceled) == len(ids) and len(canceled) >= 2
    assert sum(c["ids"] for c in assert_bounded(scale_slurm, "sacct") if c["completion"]) == len(ids)


@pytest.mark.parametrize("limit", [1, 7, 100, 5000])
def test_id_batches_keep_order_and_bound(limit: int) -> None:
    ids = [str(i) * (1 + i % 5) for i in range(3000)]
    batches = list(client.id_batches(ids, limit))
    assert [i for batch in batches for i in batch] == ids
    assert all(len(",".join(b)) <= limit or len(b) == 1 for b in batches)


@pytest.mark.parametrize("answer", ["", "\n", "   \n\n", "no pairs here"])
def test_an_empty_scontrol_answer_leaves_squeues_status(answer: str) -> None:
    from orchestrator.slurm.state import parse_scontrol

    assert parse_scontrol(answer) == {}  # raised ValueError (zip strict) before

    def runner(argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(list(argv), 0, answer, "")

    status = queries.show_job("42", runner=runner)
    assert status is None or status.job_id == "42"
