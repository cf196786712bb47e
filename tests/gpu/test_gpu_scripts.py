"""GPU checks of bring-your-own scripts under ``orch run script.py --nproc N`` (torchrun-style, no orch
import; tests/gpu/scripts): who holds a CUDA context where, mixed precision, and ``--gpus-per-task``."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from gpu_support import (
    BACKEND,
    CUDA,
    DRYRUN_NOTE,
    SCRIPTS,
    context_problems,
    explain,
    gpu_count,
    hold_and_release,
    nproc,
    orch_command,
    rank_records,
    requires_cuda,
    run_orch,
)

pytestmark = [pytest.mark.gpu, requires_cuda]


def test_script_cuda_contexts(tmp_path: Path, gpu_figure: Callable[[str], None]) -> None:
    """Proves: under ``orch run hold_gpu.py --nproc N`` every rank process holds exactly one CUDA context, on
    its own GPU, and no other process of the run (orch's launcher, its helpers) holds any: nvidia-smi's
    ``--query-compute-apps=pid,gpu_uuid`` is read while every rank holds its GPU after an NCCL all-reduce.
    The classic bug this catches is ``torch.cuda`` touched before ``set_device`` (every rank then also holds a
    context on GPU 0), in orch's launcher or its device binding. Also: orch had bound cuda:LOCAL_RANK before
    the script ran, and the all-reduce of ``rank + 1`` gave N(N+1)/2 on every rank. On one GPU the "other
    GPU" half cannot fail; a machine with 2 GPUs or more proves it."""
    n = nproc()
    out, root = tmp_path / "out", tmp_path / "jobs"
    out.mkdir()
    held = hold_and_release(orch_command(str(SCRIPTS / "hold_gpu.py"), "--nproc", str(n), "--job-root", str(root),
                                         "--", "--out", str(out)), tmp_path, out, n)
    assert held.ready and held.done.returncode == 0, explain(held.done, root)
    apps, ours = held.apps, held.ours
    records = rank_records(out, n)
    assert all(r["sum"] == n * (n + 1) / 2 and r["backend"] == BACKEND and r["world"] == n for r in records), records
    if not CUDA:
        pytest.skip(f"{DRYRUN_NOTE} (the script ran and was released: {n} ranks)")
    assert [r["bound"] for r in records] == list(range(n)), "orch binds cuda:LOCAL_RANK before the script runs"
    uuids = [r["uuid"] for r in records]
    assert len(set(uuids)) == n, f"two ranks on one GPU: {uuids}"
    if apps is None:
        pytest.skip("nvidia-smi is missing or failed: cannot list the processes holding CUDA contexts")
    rank_pids = {r["pid"]: r["uuid"] for r in records}
    if not any(pid in ours for pid, _ in apps):
        pytest.skip(f"nvidia-smi lists no process of this run ({len(apps)} other(s)): it sees another PID "
                    "namespace (a container without the host's PIDs), so it cannot tell whose context is where")
    problems = context_problems(apps, ours, rank_pids)
    assert not problems, "\n".join(problems)
    gpu_figure(f"{n} rank(s): one context each, on its own GPU; none in orch's own processes")


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_amp_script(dtype: str, tmp_path: Path, gpu_figure: Callable[[str], None]) -> None:
    """Proves: a user script using ``torch.autocast`` (bf16, or fp16 with ``GradScaler``) under DDP trains
    under ``orch run amp_train.py --nproc N``: autocast really ran in that dtype (the forward pass's output
    dtype), every loss is finite, the loss falls (the mean of the last 5 steps is below that of the first 5),
    the parameters stay finite and are bit-equal on every rank (SHA-256 of the float32 bytes), and with fp16
    the scaler's scale stays finite and positive."""
    n = nproc()
    out, root = tmp_path / "out", tmp_path / "jobs"
    out.mkdir()
    proc = run_orch(tmp_path, str(SCRIPTS / "amp_train.py"), "--nproc", str(n), "--job-root", str(root), "--",
                    "--out", str(out), "--dtype", dtype)
    assert proc.returncode == 0, explain(proc, root)
    records = rank_records(out, n)
    if "skipped" in records[0]:
        pytest.skip(records[0]["skipped"])
    expected = {"bf16": "torch.bfloat16", "fp16": "torch.float16"}[dtype]
    for r in records:
        assert (r["backend"], r["world"], r["out_dtype"]) == (BACKEND, n, expected), r
        assert all(math.isfinite(loss) for loss in r["losses"]) and r["params_finite"], r
        first, last = sum(r["losses"][:5]) / 5, sum(r["losses"][-5:]) / 5
        assert last < first, f"rank {r['rank']}: the loss did not fall ({first:.4f} -> {last:.4f})"
        if dtype == "fp16":
            assert r["scale"] is not None and 0 < r["scale"] < math.inf, r["scale"]
    digests = {r["param_sha256"] for r in records}
    assert len(digests) == 1, f"the ranks' parameters differ: {digests}"
    losses = records[0]["losses"]
    scale = f", final scale {records[0]['scale']:g}" if dtype == "fp16" else ""
    gpu_figure(f"{dtype}{' + GradScaler' if dtype == 'fp16' else ''}, {n} rank(s): loss {losses[0]:.3f} -> "
               f"{losses[-1]:.3f} in {len(losses)} steps, parameters equal{scale}")


@pytest.mark.parametrize("per_task", [1, 2])
def test_gpus_per_task_binding(per_task: int, tmp_path: Path, gpu_figure: Callable[[str], None]) -> None:
    """Proves: ``orch run show_device.py --gpus-per-task K`` starts GPUs / K ranks and gives each the GPUs
    docs/bring-your-own-script.md promises, as the script sees them before touching any device itself.
    K = 1: CUDA_VISIBLE_DEVICES as inherited (nothing narrowed) and cuda:LOCAL_RANK current, one distinct GPU
    per rank. K = 2 (needs 2 GPUs or more): CUDA_VISIBLE_DEVICES narrowed to the rank's own two ids (entries
    2*LOCAL_RANK and 2*LOCAL_RANK+1 of the inherited list), the rank sees exactly 2 GPUs and cuda:0 (the first
    of its own) is current. Either way an NCCL all-reduce over the ranks gives the world size."""
    gpus = gpu_count()
    if not CUDA:
        pytest.skip(f"{DRYRUN_NOTE} (--gpus-per-task needs GPUs)")
    if gpus < per_task or gpus % per_task:
        pytest.skip(f"--gpus-per-task {per_task} needs a multiple of {per_task} GPUs; this machine shows {gpus}")
    n = gpus // per_task
    out, root = tmp_path / "out", tmp_path / "jobs"
    out.mkdir()
    proc = run_orch(tmp_path, str(SCRIPTS / "show_device.py"), "--gpus-per-task", str(per_task), "--job-root",
                    str(root), "--", "--out", str(out))
    assert proc.returncode == 0, explain(proc, root)
    records = rank_records(out, n)
    assert not (out / f"rank{n}.json").exists(), f"more than {n} ranks started"
    inherited = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [i.strip() for i in inherited.split(",")] if inherited is not None else [str(i) for i in range(gpus)]
    for r in records:
        assert (r["sum"], r["world"], r["backend"]) == (n, n, "nccl"), r
        if per_task == 1:
            assert (r["visible"], r["device_count"], r["current"]) == (inherited, gpus, r["local_rank"]), r
        else:
            own = ",".join(ids[per_task * r["local_rank"]:per_task * (r["local_rank"] + 1)])
            assert (r["visible"], r["device_count"], r["current"]) == (own, per_task, 0), r
    assert len({r["uuid"] for r in records}) == n, [r["uuid"] for r in records]
    gpu_figure(f"K={per_task}: {n} rank(s), each on its own GPU(s); CUDA_VISIBLE_DEVICES "
               + ("as inherited" if per_task == 1 else "narrowed to the rank's own"))
