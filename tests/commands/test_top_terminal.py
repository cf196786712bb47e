"""orch top in a real terminal (tmux: send keys, capture the pane), over job folders written with orch's own
writers and the stand-in Slurm clients (tests/support/standins.py's FakeSlurm): the table shows, a changed
progress.json shows within a refresh, the cancel key asks and then cancels. The same against the local Slurm
cluster, with a training job and a killed rank: tests/e2e/test_e2e_top.py."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from support import FakeSlurm, Tmux, screen_row, training_job

from orchestrator.records.atomic import write_text_atomic

ORCH = shutil.which("orch", path=str(Path(sys.executable).parent)) or "orch"
SQUEUE = "{id}|RUNNING|None|node1|0:05|0|N/A|{name}\n"


def _progress(folder: Path, step: int) -> None:
    write_text_atomic(folder / "progress.json", json.dumps({"epoch": 1, "epochs": 2, "step": step, "steps": 10,
                                                            "loss": 0.5, "samples_per_s": 10.0, "eta_s": 5.0}))


@pytest.mark.slow
def test_orch_top_in_a_terminal(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = FakeSlurm(tmp_path / "fake-slurm")
    root = tmp_path / "jobs"
    (tmp_path / "cluster.yaml").write_text(
        "name: t\npartitions:\n  - {name: debug, nodes: 'node[1-2]', gpus_per_node: 0, cpus_per_node: 4, "
        f"mem_per_node: 4096}}\nlauncher:\n  job_root: {root}\n")
    training_job(root, "older", job_id="21", second=1)
    train = training_job(root, "training", job_id="22", second=2)
    _progress(train, 3)
    fake.set({"squeue": {"stdout": SQUEUE.format(id=21, name="older") + SQUEUE.format(id=22, name="training")},
              "scancel": {"stdout": ""}})
    env = {**os.environ, "PATH": f"{fake.bin}{os.pathsep}{os.environ['PATH']}", "FAKE_SLURM_SPEC": str(fake.spec),
           "FAKE_SLURM_LOG": str(fake.log)}
    tmux = Tmux("orch-top-test", f"{ORCH} top --interval 0.2 --slurm-interval 1", env, tmp_path)
    try:
        screen = tmux.wait_for(lambda s: "3/10" in screen_row(s, "training"), what="the training job at step 3")
        assert "RUNNING" in screen_row(screen, "training") and "older" in screen
        changed = time.monotonic()
        _progress(train, 7)
        tmux.wait_for(lambda s: "7/10" in screen_row(s, "training"), timeout=20, what="step 7")
        print(f"step 7 shown {time.monotonic() - changed:.2f} s after progress.json changed")
        tmux.keys("c")
        tmux.wait_for(lambda s: "Cancel job 22 (training)?" in s, what="the question")
        assert not [c for c in fake.calls() if c[0] == "scancel"]  # asked first: nothing sent yet
        tmux.keys("y")
        tmux.wait_for(lambda s: "cancelled 22" in s, what="the answer")
        assert [c for c in fake.calls() if c[0] == "scancel"] == [["scancel", "22"]]
        tmux.keys("q")
    finally:
        tmux.close()
