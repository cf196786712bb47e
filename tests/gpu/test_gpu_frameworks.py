"""GPU checks of framework scripts under ``orch run script.py --nproc N``: Lightning and Hugging Face
Accelerate, each skipped with the reason when it is not installed in orch's venv."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from pathlib import Path

import pytest
from gpu_support import CUDA, SCRIPTS, explain, nproc, rank_records, requires_cuda, run_orch

pytestmark = [pytest.mark.gpu, requires_cuda]


def installed(*modules: str) -> bool:
    return any(importlib.util.find_spec(m) is not None for m in modules)


def run_framework_script(tmp_path: Path, script: str) -> list[dict]:
    n = nproc()
    out, root = tmp_path / "out", tmp_path / "jobs"
    out.mkdir()
    proc = run_orch(tmp_path, str(SCRIPTS / script), "--nproc", str(n), "--job-root", str(root), "--",
                    "--out", str(out))
    assert proc.returncode == 0, explain(proc, root)
    records = rank_records(out, n)
    assert len({r["param_sha256"] for r in records}) == 1, "the ranks' parameters differ"
    assert all(r["losses"] and all(math.isfinite(x) for x in r["losses"]) for r in records)
    return records


@pytest.mark.skipif(not installed("lightning", "pytorch_lightning"),
                    reason="Lightning is not installed in orch's venv (pip install lightning to check it)")
@requires_cuda  # again, below: without CUDA that is the reason shown
def test_framework_lightning(tmp_path: Path, gpu_figure: Callable[[str], None]) -> None:
    """Proves: a Lightning ``Trainer(strategy="ddp", devices=LOCAL_WORLD_SIZE)`` script under orch takes orch's
    ranks (TorchElasticEnvironment; global rank = RANK, world size = N: it started no processes of its own),
    trains each rank on cuda:LOCAL_RANK with finite losses and ends with the same parameters on every rank."""
    records = run_framework_script(tmp_path, "lightning_train.py")
    n = len(records)
    for rank, r in enumerate(records):
        assert (r["global_rank"], r["world_size"], r["environment"]) == (rank, n, "TorchElasticEnvironment"), r
        assert r["device"] == (f"cuda:{rank}" if CUDA else "cpu"), r
    gpu_figure(f"Lightning DDP, {n} rank(s), {records[0]['precision']}: loss {records[0]['losses'][0]:.3f} -> "
               f"{records[0]['losses'][-1]:.3f}, parameters equal")


@pytest.mark.skipif(not installed("accelerate"),
                    reason="Accelerate is not installed in orch's venv (pip install accelerate to check it)")
@requires_cuda  # again, below: without CUDA that is the reason shown
def test_framework_accelerate(tmp_path: Path, gpu_figure: Callable[[str], None]) -> None:
    """Proves: an ``Accelerator()`` script under orch takes orch's ranks from the environment (process index =
    RANK, N processes), puts each on its own CUDA device, trains with finite losses and ends with the same
    parameters on every rank."""
    records = run_framework_script(tmp_path, "accelerate_train.py")
    n = len(records)
    for rank, r in enumerate(records):
        assert (r["process_index"], r["num_processes"]) == (rank, n), r
        if CUDA:
            assert r["device"] in ({f"cuda:{rank}"} if n > 1 else {"cuda", "cuda:0"}), r
    gpu_figure(f"Accelerate ({records[0]['distributed_type']}), {n} rank(s), {records[0]['precision']}: "
               f"parameters equal")
