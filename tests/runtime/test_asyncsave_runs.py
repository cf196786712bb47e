"""Background checkpoint writes in real ``orch run``s (2 ranks, the faulty test job): rank 0 killed with SIGKILL
while its background write is stalled leaves the previous checkpoint as ``latest.pt``, and the run resumed from it
ends with the parameters of an uninterrupted run (written with ``launcher.checkpoint_write: sync``); a preemption
checkpoint is on disk when the ranks exit, however slow its write; result.json splits the checkpoint time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, TESTS, clean_environ

from orchestrator.records.restarts.attempts import CHECKPOINT_STALL, CHECKPOINT_STALL_IN_TRAINING, CHECKPOINT_WRITE
from orchestrator.spec.runconfig import CHECKPOINT_DIR

FAULTY = TESTS / "jobs" / "faulty.py"
PARAMS = ["epochs=3", "samples=400", "test_samples=64"]
RUN_TIMEOUT = 240

# Every rank of a run with this hook on its path: the fsync of a new checkpoint (once one exists) first says so in
# $SLOW_WRITE_MARK (the pid) and then takes $SLOW_WRITE_S seconds: a slow disk, in the background writer's thread.
SLOW_FSYNC = """\
import os, time
_fsync = os.fsync
def fsync(fd):
    name = os.readlink(f"/proc/self/fd/{fd}") if isinstance(fd, int) else ""
    folder, base = os.path.split(name)
    if base.startswith(".tmp-latest.pt.") and os.path.exists(os.path.join(folder, "latest.pt")):
        mark = os.environ.get("SLOW_WRITE_MARK")
        if mark and not os.path.exists(mark):
            with open(mark + ".tmp", "w") as fh:
                fh.write(str(os.getpid()))
            os.replace(mark + ".tmp", mark)
        time.sleep(float(os.environ.get("SLOW_WRITE_S", "0")))
    return _fsync(fd)
os.fsync = fsync
"""


def cluster(root: Path, mode: str) -> Path:
    path = root / f"cluster-{mode}.yaml"
    path.write_text(
        "name: local-tests\n"
        "partitions:\n"
        "  - {name: cpu, nodes: 'node[1-2]', gpus_per_node: 0, cpus_per_node: 2, mem_per_node: 4G}\n"
        f"launcher: {{init_timeout: 60, collective_timeout: 20, checkpoint_write: {mode}, "
        f"job_root: '{root / 'jobs'}'}}\n", encoding="utf-8")
    return path


def orch_run(cluster_file: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([ORCH, "run", "--cluster", str(cluster_file), "--json", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=clean_environ(**env))


def finished(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any], str]:
    out, err = proc.communicate(timeout=RUN_TIMEOUT)
    assert out.strip(), err[-3000:]
    return proc.returncode, json.loads(out), err


def slow_env(tmp_path: Path, seconds: float, mark: Path) -> dict[str, str]:
    hook = tmp_path / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(SLOW_FSYNC, encoding="utf-8")
    path = os.pathsep.join(p for p in [str(hook), os.environ.get("PYTHONPATH", "")] if p)
    return {"PYTHONPATH": path, "SLOW_WRITE_MARK": str(mark), "SLOW_WRITE_S": str(seconds)}


@pytest.mark.slow
def test_rank0_killed_during_a_background_write_resumes_from_the_previous_checkpoint_bit_exact(
        tmp_path: Path) -> None:
    from orchestrator.runtime.checkpoint import LATEST, TMP_PREFIX, read_checkpoint

    code, straight, err = finished(orch_run(cluster(tmp_path, "sync"), str(FAULTY), "--nproc", "2", *PARAMS))
    assert code == 0, err[-3000:]
    assert straight["result"][CHECKPOINT_STALL] >= straight["result"][CHECKPOINT_WRITE] > 0  # sync: all a stall
    # the saves after epochs 1 and 2 fell between steps; the last epoch's after the last step
    assert 0 < straight["result"][CHECKPOINT_STALL_IN_TRAINING] <= straight["result"][CHECKPOINT_STALL]
    async_cluster = cluster(tmp_path, "async")
    mark = tmp_path / "writing"
    proc = orch_run(async_cluster, str(FAULTY), "--nproc", "2", *PARAMS, **slow_env(tmp_path, 600, mark))
    deadline = time.monotonic() + RUN_TIMEOUT
    while not mark.exists():  # the second checkpoint (after epoch 2) is being written in the background
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-3000:]
        time.sleep(0.1)
    os.kill(int(mark.read_text()), signal.SIGKILL)
    code, summary, err = finished(proc)
    assert code != 0, err[-3000:]
    folder = Path(summary["job_dir"]) / CHECKPOINT_DIR
    assert [p.name for p in folder.iterdir() if p.name.startswith(TMP_PREFIX)], "killed mid-write"
    state = read_checkpoint(folder / LATEST)
    assert (state["epoch"], state["step"]) == (1, 0)  # the checkpoint after epoch 1, whole
    code, again, err = finished(orch_run(async_cluster, "--resume", summary["job_dir"]))
    assert code == 0, err[-3000:]
    assert again["result"]["param_digest"] == straight["result"]["param_digest"]
    assert not [p.name for p in folder.iterdir() if p.name.startswith(TMP_PREFIX)]
    assert read_checkpoint(folder / LATEST)["epoch"] == 3


@pytest.mark.slow
def test_a_preemption_checkpoint_is_on_disk_before_the_ranks_exit(tmp_path: Path) -> None:
    from orchestrator.runtime.checkpoint import LATEST, read_checkpoint

    mark = tmp_path / "writing"
    _, summary, err = finished(orch_run(
        cluster(tmp_path, "async"), str(FAULTY), "--nproc", "2", *PARAMS, "signal_step=30", "signal_rank=-1",
        **slow_env(tmp_path, 3, mark)))
    log = (Path(summary["job_dir"]) / "logs" / "local-rank0.out").read_text(encoding="utf-8")
    assert "preempted" in log + err, (log + err)[-3000:]
    assert mark.exists()  # the preemption checkpoint's write was slow ...
    state = read_checkpoint(Path(summary["job_dir"]) / CHECKPOINT_DIR / LATEST)
    assert state["epoch"] == 2 and state["step"] > 0, (state["epoch"], state["step"])  # ... and landed whole
    assert state[CHECKPOINT_STALL] > 0 and state[CHECKPOINT_WRITE] > 0  # the ledger so far, in the checkpoint
