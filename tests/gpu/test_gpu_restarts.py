"""GPU check: in-process restarts (orch's default) on CUDA with NCCL. tests/jobs/faulty.py under ``orch run``, one rank
per GPU, its last rank failing in epoch 2 (killed, stopped, or raising): its agent forks a new worker in the same
step, the worker binds its GPU again, joins a new NCCL group, resumes from epoch 1's checkpoint and ends with the
parameters of an uninterrupted run on the same GPUs. The CPU suite proves the same on gloo
(tests/restarts/test_agent.py); what only a GPU shows is that a worker forked by an agent can use CUDA (the agent
holds no CUDA context to inherit) and that a new NCCL group forms on a GPU the failed worker held."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gpu_support import (
    BACKEND,
    CUDA,
    DEVICE_TYPE,
    RUN_TIMEOUT,
    SCRIPTS,
    explain,
    job_dir,
    nproc,
    rank_records,
    requires_cuda,
    run_env,
    run_orch,
)
from support import ORCH, TESTS

pytestmark = [pytest.mark.gpu, requires_cuda]

FAULTY = TESTS / "jobs" / "faulty.py"
PARAMS = ["epochs=2", "samples=1001", "check_sync=true"]  # 63 steps per epoch on 1 rank, 32 on 2, 16 on 4


def _cluster(folder: Path, max_restarts: int) -> Path:
    path = folder / f"cluster-{max_restarts}.yaml"
    path.write_text(
        "name: gpu-checks\n"
        "partitions:\n"
        f"  - {{name: gpu, nodes: 'node1', gpus_per_node: {max(nproc(), 1)}, cpus_per_node: 16, mem_per_node: 64G}}\n"
        f"launcher: {{init_timeout: 60, collective_timeout: 20, checkpoint_write: sync, job_root: '{folder / 'jobs'}', "
        f"restart: in-process, max_restarts: {max_restarts}}}\n", encoding="utf-8")
    return path


def _run(folder: Path, max_restarts: int, *params: str) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    folder.mkdir(parents=True, exist_ok=True)
    argv = [ORCH, "run", "--cluster", str(_cluster(folder, max_restarts)), "--json", str(FAULTY),
            "--nproc", str(nproc()), *PARAMS, *params]
    proc = subprocess.run(argv, cwd=folder, env=run_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          check=False)
    assert proc.stdout.strip(), explain(proc, folder / "jobs")
    return json.loads(proc.stdout), proc


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The parameters of the same job uninterrupted on the same GPUs (no agent)."""
    summary, proc = _run(tmp_path_factory.mktemp("reference"), 0)
    assert summary["status"] == "completed", explain(proc, Path(summary.get("job_dir", ".")).parent)
    digest: str = summary["result"]["param_digest"]
    return digest


# a stopped rank is "stopped" where its agent sees it first (alone), "stuck" where a peer gave up waiting first
KINDS = {"kill": {"vanished"}, "stop": {"stopped", "stuck"}, "raise": {"failed"}}


@pytest.mark.parametrize("fault", sorted(KINDS))
def test_a_failed_rank_is_restarted_in_process_on_its_gpu(tmp_path: Path, reference: str, fault: str,
                                                          gpu_figure: Callable[[str], None]) -> None:
    """Proves: the run completes after one in-process restart (attempts.json: the first attempt ``in_process``, its
    kind, the failed rank blamed; the second completed), rank 0's last banner says it trained on
    ``cuda:0 (physical GPU ..., nccl)`` and resumed from a checkpoint, and the final parameters are bit-equal to the
    uninterrupted run's. With 2 GPUs or more, the surviving ranks kept their processes. Figure: the recovery
    time (failure to the new generation's start) and the steps lost."""
    n = nproc()
    last = n - 1
    step = 80 // n + 8  # in epoch 2 (63 steps an epoch on 1 rank, 32 on 2): epoch 1's checkpoint is on disk
    summary, proc = _run(tmp_path, 1, f"fault={fault}", f"fault_rank={last}", f"fault_step={step}",
                         "fault_restart=0")
    job_dir = Path(summary["job_dir"])
    assert summary["status"] == "completed", explain(proc, job_dir.parent)
    first, second = json.loads((job_dir / "attempts.json").read_text(encoding="utf-8"))
    assert first["in_process"] is True and first["kind"] in KINDS[fault] and first["blamed_rank"] == last, first
    assert second["attempt"] == 1 and second["kind"] == "completed", second
    assert first["next_step"] > 0, first  # resumed from a checkpoint, not from the start
    if n > 1:
        assert all(first["pids"][str(r)] == second["pids"][str(r)] for r in range(last)), (first, second)
    assert first["pids"][str(last)] != second["pids"][str(last)], (first, second)
    log = (job_dir / "logs" / "local-rank0.out").read_text(encoding="utf-8", errors="replace").splitlines()
    banners = [i for i, line in enumerate(log) if line.startswith("orch: job ")]
    assert len(banners) >= 2, "\n".join(log[-40:])  # one banner per generation
    expected = "cuda:0 (physical GPU" if CUDA else "cpu (gloo)"
    assert expected in log[banners[-1]] and f"{BACKEND})" in log[banners[-1]], log[banners[-1]]
    assert any(line.startswith("orch: resuming from checkpoint") for line in log[banners[-1]:]), "\n".join(log[-40:])
    assert summary["result"]["param_digest"] == reference, (summary["result"], reference)
    lost = first["lost_steps"]  # unknown where the only rank died without a record of its last step
    gpu_figure(f"{fault}: recovery {first['recovery_s']:.2f} s, "
               f"{'?' if lost is None else lost} step(s) redone, {n} rank(s) on {DEVICE_TYPE}, "
               "parameters bit-equal to the uninterrupted run")


def test_a_users_script_restarts_warm_in_process_on_its_gpu(tmp_path: Path, gpu_figure: Callable[[str], None]) -> None:
    """Proves: a user's torchrun-style script (tests/gpu/scripts/amp_train.py, bf16 autocast under DDP) whose last
    rank is killed (SIGKILL) at step 10 is restarted in the step (attempts.json: the first attempt ``in_process``, the
    second completed): the new world, forked by the ranks' agents, binds its GPUs, forms a new NCCL group with
    TORCHELASTIC_RESTART_COUNT 1, and trains to the parameters of an uninterrupted run of the script (SHA-256 of
    the float32 bytes). Figure: the two runs' wall times (orch records no training step of a script, so no recovery
    time of its own)."""
    n = nproc()
    digests, seconds = {}, {}
    for name, extra in (("reference", []), ("killed", ["--kill-first-attempt", str(n - 1)])):
        out, root = tmp_path / name / "out", tmp_path / name / "jobs"
        out.mkdir(parents=True)
        began = time.monotonic()
        proc = run_orch(tmp_path, str(SCRIPTS / "amp_train.py"), "--nproc", str(n), "--job-root", str(root),
                        "--max-restarts", "1", "--", "--out", str(out), "--dtype", "bf16", *extra)
        seconds[name] = time.monotonic() - began
        assert proc.returncode == 0, explain(proc, root)
        records = rank_records(out, n)
        if "skipped" in records[0]:
            pytest.skip(records[0]["skipped"])
        assert {r["restart"] for r in records} == {1 if extra else 0}, records
        assert {(r["backend"], r["world"]) for r in records} == {(BACKEND, n)}, records
        digests[name] = {r["param_sha256"] for r in records}
        attempts = json.loads((job_dir(root) / "attempts.json").read_text(encoding="utf-8"))
    first, second = attempts
    assert first["in_process"] is True and first["kind"] in {"vanished", "stuck"}, first
    assert second["kind"] == "completed", second
    assert digests["killed"] == digests["reference"] and len(digests["reference"]) == 1, digests
    gpu_figure(f"script, {n} rank(s) on {DEVICE_TYPE}: {seconds['killed']:.1f} s with the restart, "
               f"{seconds['reference']:.1f} s uninterrupted; parameters bit-equal")
