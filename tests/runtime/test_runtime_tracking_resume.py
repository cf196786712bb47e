"""Per-step scalars across attempts, for real: 2 gloo ranks through ``orch run``, killed or preempted, then
``orch run --resume``: TensorBoard's own reader (``EventAccumulator``) and ``steps.jsonl`` see ONE strictly
increasing step sequence of ``train/loss``, every optimizer step once; a script sees the same tracker ids in
both attempts."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, ROOT, clean_environ

from orchestrator.spec.tracking import STEPS_FILE, TB_DIR, run_id

pytestmark = pytest.mark.slow

FAULTY = ROOT / "tests" / "jobs" / "faulty.py"
TIMEOUT = 180
STEPS_PER_EPOCH = 32  # 1001 samples, 2 ranks, batch 16


def orch(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, "run", "--json", *args], capture_output=True, text=True, timeout=TIMEOUT,
                          env=env or clean_environ(), check=False)


def summary(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.stdout.strip(), proc.stderr[-3000:]
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def tb_steps(job_dir: Path, tag: str = "train/loss") -> list[int]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(job_dir / TB_DIR), size_guidance={"scalars": 0})
    acc.Reload()
    return [event.step for event in acc.Scalars(tag)]


def jsonl_steps(job_dir: Path, key: str = "train/loss") -> list[int]:
    lines = (job_dir / STEPS_FILE).read_text().splitlines()
    return [record["step"] for record in map(json.loads, lines) if key in record]


@pytest.mark.parametrize("stop", ["kill", "preempt"])
def test_interrupted_and_resumed_job_has_one_increasing_step_sequence(tmp_path: Path, stop: str) -> None:
    # kill: rank 1 dies at its 40th step (epoch 2), 8 steps after the epoch-1 checkpoint: the points rank 0
    # logged past the checkpoint are logged again by the resumed run (TensorBoard must not show them twice).
    # preempt: every rank stops at one step mid-epoch 2 with a checkpoint there.
    fault = ["fault=kill", "fault_step=40"] if stop == "kill" else ["signal_step=45"]
    common = ["epochs=2", "samples=1001", "log_every=1"]
    # --max-restarts 0: the interruption ends this run, and the resume below is a second `orch run`
    first = orch(str(FAULTY), "--nproc", "2", "--job-root", str(tmp_path), "--max-restarts", "0", *common, *fault)
    job_dir = Path(summary(first)["job_dir"])
    if stop == "kill":
        assert first.returncode == 128 + signal.SIGKILL, first.stderr[-3000:]
        logged = tb_steps(job_dir)
        assert max(logged) > STEPS_PER_EPOCH, "the killed attempt logged past its checkpoint"
    else:
        assert first.returncode == 0 and summary(first)["status"] == "preempted", first.stderr[-3000:]
    resumed = orch("--resume", str(job_dir), "fault=none", "signal_step=-1")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    expected = list(range(1, 2 * STEPS_PER_EPOCH + 1))  # every optimizer step once, in order
    assert tb_steps(job_dir) == expected
    assert jsonl_steps(job_dir) == expected
    assert tb_steps(job_dir, "epoch/test_loss") == [STEPS_PER_EPOCH, 2 * STEPS_PER_EPOCH]
    metrics = [json.loads(line) for line in (job_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["global_step"] for m in metrics] == [STEPS_PER_EPOCH, 2 * STEPS_PER_EPOCH]


def test_default_log_every_gives_a_few_hundred_points_at_most(tmp_path: Path) -> None:
    proc = orch(str(FAULTY), "--nproc", "1", "--job-root", str(tmp_path), "epochs=1", "samples=1024",
                "batch_size=1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    steps = jsonl_steps(Path(summary(proc)["job_dir"]))
    assert steps == list(range(5, 1025, 5))  # 1024 optimizer steps // 200 points = every 5th


SEEN = '''
import json, os, sys
from pathlib import Path
out = Path(sys.argv[1])
out.mkdir(exist_ok=True)
names = ("ORCH_RUN_ID", "WANDB_RUN_ID", "WANDB_RESUME", "WANDB_RUN_GROUP", "MLFLOW_RUN_ID",
         "TORCHELASTIC_RESTART_COUNT")
seen = {n: os.environ.get(n) for n in names}
(out / f"seen{os.environ['RANK']}-{seen['TORCHELASTIC_RESTART_COUNT']}.json").write_text(json.dumps(seen))
'''


@pytest.mark.parametrize("track", [True, False])
def test_script_sees_the_same_run_ids_in_both_attempts(tmp_path: Path, track: bool) -> None:
    script, out, jobs = tmp_path / "seen.py", tmp_path / "out", tmp_path / "jobs"
    script.write_text(SEEN)
    fake = tmp_path / "fake"  # a wandb module for orch run's check that the package is there
    (fake / "wandb").mkdir(parents=True)
    (fake / "wandb" / "__init__.py").write_text("")
    env = clean_environ(PYTHONPATH=f"{fake}:{ROOT}")
    first = orch(str(script), "--nproc", "2", "--job-root", str(jobs), *(["--track", "wandb"] if track else []),
                 "--", str(out), env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    job_dir = Path(summary(first)["job_dir"])
    second = orch("--resume", str(job_dir), env=env)
    assert second.returncode == 0, second.stderr[-3000:]
    for rank in (0, 1):
        a, b = (json.loads((out / f"seen{rank}-{n}.json").read_text()) for n in (0, 1))
        assert a["ORCH_RUN_ID"] == b["ORCH_RUN_ID"] == run_id(job_dir)
        if track:
            assert a["WANDB_RUN_ID"] == b["WANDB_RUN_ID"] == run_id(job_dir)
            assert a["WANDB_RESUME"] == b["WANDB_RESUME"] == "allow"
        else:
            assert a["WANDB_RUN_ID"] is None and b["WANDB_RUN_ID"] is None
        assert a["WANDB_RUN_GROUP"] is None and a["MLFLOW_RUN_ID"] is None  # no sweep, no mlflow


def test_an_unknown_tracker_is_refused(tmp_path: Path) -> None:
    proc = orch(str(FAULTY), "--job-root", str(tmp_path), "--track", "nosuch")
    assert proc.returncode == 2 and "unknown tracker 'nosuch'" in proc.stderr, proc.stderr[-2000:]
    assert not tmp_path.exists() or not any(tmp_path.iterdir())
