"""Every Slurm query with many ids is cut into batches bounded by argument length, and every id still gets an
answer (squeue, sacct, scontrol, scancel and the completion log); an empty scontrol answer leaves squeue's status.

The Slurm clients are stand-ins first on PATH (real subprocesses, as the CLI runs them): they answer
every id they are asked about and record the size of each command line they were given.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from orchestrator.slurm import client

ARGV_BOUND = 64 * 1024  # what a call may carry in all (Linux: 128 KiB per argument, ~2 MiB in all)


# SubmitTime N/A: no folder is taken for a reused id. squeue holds the ids divisible by 3 (RUNNING);
# sacct answers the others (COMPLETED, or FAILED for ids ending in 7): every id gets an answer only if
# every batch is asked.
STAND_IN = """\
import json, os, sys
name = os.path.basename(sys.argv[0])
args = sys.argv[1:]
ids = []
for arg in args:
    if arg.startswith("--jobs="):
        ids += [i for i in arg[len("--jobs="):].split(",") if i]
if name == "scancel":
    ids = [a for a in args if not a.startswith("-")]
with open(os.environ["SCALE_SLURM_LOG"], "a") as fh:
    fh.write(json.dumps({"name": name, "argv_bytes": sum(len(a.encode()) + 1 for a in sys.argv),
                         "longest": max(len(a.encode()) for a in sys.argv), "ids": len(ids),
                         "first": ids[0] if ids else None, "completion": "--completion" in args}) + "\\n")
if name == "squeue":
    out = [f"{i}|RUNNING|None|node1|1:00|0|N/A|scale" for i in ids if int(i.split("_")[0]) % 3 == 0]
elif name == "sacct" and "--completion" in args:
    out = [f"{i}|COMPLETED|0:0|node1|00:01:00|scale" for i in ids]
elif name == "sacct":
    out = [f"{i}|{'FAILED' if i.endswith('7') else 'COMPLETED'}|{'1:0' if i.endswith('7') else '0:0'}|node1|"
           f"00:01:00|60|cpu=1,gres/gpu=2|N/A|scale" for i in ids]
else:
    out = []
sys.stdout.write("".join(line + "\\n" for line in out))
"""


@pytest.fixture
def scale_slurm(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Stand-in squeue/sacct/scancel/scontrol on PATH; returns the file their calls are logged in."""
    bin_dir = tmp_path / "scale-bin"
    bin_dir.mkdir()
    for name in ("squeue", "sacct", "scancel", "scontrol"):
        exe = bin_dir / name
        exe.write_text(f"#!{sys.executable}\n{STAND_IN}")
        exe.chmod(0o755)
    log = tmp_path / "scale-calls.jsonl"
    clean_env.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    clean_env.setenv("SCALE_SLURM_LOG", str(log))
    clean_env.setenv("ORCH_STATE_DIR", str(tmp_path / "state"))
    return log


def calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def assert_bounded(log: Path, name: str) -> list[dict[str, Any]]:
    made = [c for c in calls(log) if c["name"] == name]
    assert made, f"no {name} call"
    assert max(c["argv_bytes"] for c in made) <= ARGV_BOUND
    assert max(c["longest"] for c in made) <= client.ID_BATCH_BYTES + 64
    return made


@pytest.mark.parametrize("ids", [
    [str(1_000_000 + i) for i in range(20_000)],  # 7-digit ids, as a busy cluster has them
    [f"{4_000_000_000 + i}_{i % 50}" for i in range(12_000)],  # long array element ids
])
def test_job_status_of_many_ids_is_batched_and_answers_every_id(scale_slurm: Path, ids: list[str]) -> None:
    found = client.job_status(ids, details=False)
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
    assert set(client.jobcomp(ids)) == set(ids)
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

    status = client.show_job("42", runner=runner)
    assert status is None or status.job_id == "42"
