"""GPU check of NCCL's flight recorder under a real hang: ``orch run nccl_hang.py --nproc N --collective-timeout
10`` (rank 1 sleeps before collective 6, an all_reduce; tests/gpu/scripts/nccl_hang.py). Needs 2 GPUs or more:
NCCL refuses two ranks on one GPU. Prepared on a machine without a GPU, where it is skipped; the reading itself
is unit-tested on recorded dumps (tests/records/test_flightrec.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from gpu_support import CUDA, DRYRUN_NOTE, SCRIPTS, explain, gpu_count, job_dir, requires_cuda, run_orch

from orchestrator.records import flightrec

pytestmark = [pytest.mark.gpu, requires_cuda]


def test_an_nccl_hang_is_read_from_the_flight_recorder(tmp_path: Path, gpu_figure: Callable[[str], None]) -> None:
    """Proves: when NCCL's watchdog times out, torch writes each rank's flight recorder dump where orch asked
    (``logs/nccl_trace_rank_<R>``), orch reads it without torch, and the places table (``logs/places.json``,
    ``orch run``'s last line) names rank 1 with the collective it never reached: the ranks that timed out are in
    all_reduce (collective 6), and rank 1's stack is in ``load_batch``. Whether rank 1's own dump is written depends on
    torch's propagation of the dump signal to a rank stuck in Python: when it is, the flight verdict must blame
    rank 1 (behind), and the check reports which ranks left one."""
    if not CUDA:
        pytest.skip(f"{DRYRUN_NOTE} (gloo writes no flight recorder dump on a timeout)")
    n = gpu_count()
    if n < 2:
        pytest.skip(f"{n} GPU: a hang between NCCL ranks needs 2 GPUs or more (NCCL refuses two ranks on one GPU)")
    root = tmp_path / "jobs"
    proc = run_orch(tmp_path, str(SCRIPTS / "nccl_hang.py"), "--nproc", str(n), "--collective-timeout", "10",
                    "--job-root", str(root))
    assert proc.returncode != 0, explain(proc, root)
    job = job_dir(root)
    written = [r for r in range(n) if flightrec.dump_path(job, r).is_file()]
    assert 0 in written, f"rank 0 timed out but left no flight recorder dump\n{explain(proc, root)}"
    dumps = flightrec.read_dumps(job, range(n))
    assert all(dumps[r] is not None for r in written), "a dump torch wrote could not be read"
    kept = json.loads((job / "logs" / "places.json").read_text(encoding="utf-8"))
    ranks = {row["rank"]: row for row in kept["ranks"]}
    assert ranks[0]["state"] == "collective" and ranks[0]["op"] == "all_reduce" and ranks[0]["seq"] == 6, kept
    assert ranks[1]["function"] == "load_batch", kept
    assert kept["culprit"] and kept["culprit"].startswith("rank 1 "), kept
    if 1 in written:
        assert kept["flight"]["kind"] == "behind" and kept["flight"]["culprits"] == [1], kept
    assert "rank 1" in proc.stderr, explain(proc, root)
    gpu_figure(f"{n} NCCL ranks: dumps from ranks {written}; {kept['culprit'][:120]}")
