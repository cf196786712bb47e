"""GPU checks of the launch styles (orchestrator/spec/launch.py) that this machine's CPU runs cannot show:
a per-node script's ``mp.spawn`` ranks each hold one CUDA context on their own GPU, and the task orch starts
for the node (which binds no GPU for this style) holds none."""

from __future__ import annotations

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
    hold_and_release,
    nproc,
    orch_command,
    rank_records,
    requires_cuda,
)

pytestmark = [pytest.mark.gpu, requires_cuda]


def test_per_node_script_contexts(tmp_path: Path, gpu_figure: Callable[[str], None]) -> None:
    """Proves: ``orch run spawn_hold_gpu.py --nproc N -- -n {nnodes} -g {nproc_per_node} -nr {node_rank}`` is one
    task that spawns N ranks (their parent is that task's process), the NCCL all-reduce of ``rank + 1`` gives
    N(N+1)/2 on every rank, each rank holds exactly one context on its own GPU, and no other process of the run
    (the per-node task, orch's launcher) holds any: orch bound no device in the parent."""
    n = nproc()
    out, root = tmp_path / "out", tmp_path / "jobs"
    out.mkdir()
    argv = orch_command(str(SCRIPTS / "spawn_hold_gpu.py"), "--nproc", str(n), "--job-root", str(root), "--",
                        "-n", "{nnodes}", "-g", "{nproc_per_node}", "-nr", "{node_rank}", "--out", str(out))
    held = hold_and_release(argv, tmp_path, out, n)
    assert held.ready and held.done.returncode == 0, explain(held.done, root)
    apps, ours = held.apps, held.ours
    records = rank_records(out, n)
    assert all(r["sum"] == n * (n + 1) / 2 and r["backend"] == BACKEND and r["world"] == n for r in records), records
    assert len({r["parent"] for r in records}) == 1, "one task per node spawned every rank"
    if not CUDA:
        pytest.skip(f"{DRYRUN_NOTE} (the per-node script ran and was released: {n} ranks)")
    assert [r["bound"] for r in records] == [0] * n, "a spawned process starts on cuda:0 (nothing bound it)"
    uuids = [r["uuid"] for r in records]
    assert len(set(uuids)) == n, f"two ranks on one GPU: {uuids}"
    if apps is None:
        pytest.skip("nvidia-smi is missing or failed: cannot list the processes holding CUDA contexts")
    if not any(pid in ours for pid, _ in apps):
        pytest.skip("nvidia-smi sees another PID namespace: it cannot tell whose context is where")
    problems = context_problems(apps, ours, {r["pid"]: r["uuid"] for r in records})
    assert not problems, "\n".join(problems)
    gpu_figure(f"per-node, {n} spawned rank(s): one context each, on its own GPU; none in the node's task")
