"""MNIST from the real files (ORCH_DATA_DIR; ../shared/data next to the repository by default).

Skipped, with the reason, where the files are absent; the IDX decoding itself is also tested on
small files the tests write (tests/runtime/test_runtime_data.py).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch
from support import ORCH, ROOT, clean_environ

from jobs._datasets import MNIST_FILES, load_mnist

DATA_DIR = Path(os.environ.get("ORCH_DATA_DIR") or ROOT.parent / "shared" / "data")
HAVE_MNIST = all((DATA_DIR / "MNIST" / "raw" / f"{name}.gz").is_file() for name in MNIST_FILES.values())

REASON = f"MNIST files not found under {DATA_DIR}/MNIST/raw (set ORCH_DATA_DIR to the folder holding MNIST/)"
pytestmark = [pytest.mark.mnist, pytest.mark.skipif(not HAVE_MNIST, reason=REASON)]


def test_real_files_decode() -> None:
    train, test = load_mnist(DATA_DIR)
    assert train.inputs.shape == (60000, 1, 28, 28) and test.inputs.shape == (10000, 1, 28, 28)
    assert torch.bincount(train.targets).tolist()[:2] == [5923, 6742]  # the published class counts
    assert torch.bincount(test.targets).sum() == 10000
    assert abs(float(train.inputs.mean())) < 0.01 and abs(float(train.inputs.std()) - 1) < 0.02


@pytest.mark.slow
def test_two_ranks_reach_98_percent(tmp_path: Path) -> None:
    proc = subprocess.run([ORCH, "run", "mnist", "--nproc", "2", "--data-dir", str(DATA_DIR), "--job-root",
                           str(tmp_path), "--json"],
                          capture_output=True, text=True, timeout=900, env=clean_environ(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    final = summary["final"]
    assert final["world_size"] == 2 and final["train_samples"] == 60000 and final["epoch"] == final["epochs"]
    assert final["test_acc"] >= 0.98, f"test accuracy {final['test_acc']:.4f} after {final['epochs']} epochs"
    assert summary["result"]["in_sync"] is True
