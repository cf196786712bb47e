"""GPU check: the built-in ``mnist`` job trained on CUDA with NCCL through the real CLI, its samples/s read
from the job folder's records."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from gpu_support import (
    BACKEND,
    CUDA,
    DATA_DIR,
    DEVICE_TYPE,
    HAVE_MNIST,
    NO_MNIST,
    explain,
    job_dir,
    last_metrics,
    nproc,
    requires_cuda,
    run_orch,
)

pytestmark = [pytest.mark.gpu, requires_cuda]


@pytest.mark.skipif(not HAVE_MNIST, reason=NO_MNIST)
@requires_cuda  # again, below: without CUDA that is the reason shown, not MNIST's
def test_mnist_cuda_nccl(tmp_path: Path, gpu_figure: Callable[[str], None]) -> None:
    """Proves: ``orch run mnist --nproc N`` (one rank per GPU) trains on CUDA with the NCCL backend (rank
    0's banner in logs/local-rank0.out: ``cuda:0 (physical GPU ..., nccl)``; orch's entrypoint stops when two
    ranks share a GPU, so N ranks passing means N distinct GPUs) and completes one epoch: exit 0, result.json
    ``completed`` after a single attempt (attempts.json), every rank's parameter digest equal (DDP over NCCL
    kept the replicas in sync). It learns (test accuracy at least 80% after one epoch; about 98% with one
    rank) and records its throughput. Figure: samples/s of the epoch from metrics.jsonl (what ``orch run``
    wrote, not what it printed), cross-checked with progress.json."""
    n = nproc()
    root = tmp_path / "jobs"
    limit = [] if CUDA else ["max_steps_per_epoch=30"]  # dry run: a few steps on the CPU
    proc = run_orch(tmp_path, "mnist", "--nproc", str(n), "--data-dir", str(DATA_DIR), "--job-root", str(root),
                    "--json", "epochs=1", *limit)
    assert proc.returncode == 0, explain(proc, root)
    folder = job_dir(root)
    log = (folder / "logs" / "local-rank0.out").read_text(encoding="utf-8").splitlines()
    banner = next((line for line in log if line.startswith("orch: job mnist |")), "\n".join(log[:20]))
    expected = "cuda:0 (physical GPU" if CUDA else "cpu (gloo)"
    assert f"world size {n} " in banner and expected in banner and f"{BACKEND})" in banner, banner
    result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    assert result["status"] == "completed" and result["world_size"] == n, result
    assert len(result["param_digests"]) == n and len(set(result["param_digests"])) == 1, result["param_digests"]
    assert result["in_sync"] is True
    attempts = json.loads((folder / "attempts.json").read_text(encoding="utf-8"))
    assert [a["kind"] for a in attempts] == ["completed"], attempts  # one attempt: no restart hid a failure
    metrics = last_metrics(folder)
    progress = json.loads((folder / "progress.json").read_text(encoding="utf-8"))
    assert metrics["epoch"] == metrics["epochs"] == 1 and metrics["world_size"] == n
    assert metrics["samples_per_s"] > 0 and progress["samples_per_s"] == metrics["samples_per_s"]
    if CUDA:
        assert metrics["train_samples"] == 60000 and metrics["test_acc"] >= 0.80, metrics
    batch = json.loads((folder / "job.json").read_text(encoding="utf-8"))["params"]["batch_size"]
    gpu_figure(f"{metrics['samples_per_s']:,.0f} samples/s ({n} rank(s) on {DEVICE_TYPE}, {BACKEND}, batch "
               f"{batch} per rank, {metrics['steps']} steps); test acc {metrics['test_acc']:.2%}")
