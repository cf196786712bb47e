"""Ranks of orch's entrypoint forked from one server (orchestrator/runtime/forkserver.py) train as started ones do:
the same job run both ways ends with the same parameters, to the bit; the forked ranks did not import torch
themselves (their start-up records have no ``import_torch``), the started ones did."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import torch
from support import ORCH, clean_environ


def _run(base: Path, forked: bool) -> Path:
    base.mkdir()
    proc = subprocess.run([ORCH, "run", "smoke", "--nproc", "2", "--job-root", str(base / "jobs"), "samples=256",
                           "test_samples=64", "epochs=2"], capture_output=True, text=True, cwd=base, timeout=300,
                          env=clean_environ(ORCH_FORK_RANKS="1" if forked else "0"), check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (folder,) = (base / "jobs").iterdir()
    return folder


def test_forked_ranks_train_to_the_parameters_started_ranks_reach(tmp_path: Path) -> None:
    forked, started = _run(tmp_path / "forked", True), _run(tmp_path / "started", False)
    states = [torch.load(folder / "checkpoints" / "latest.pt", map_location="cpu", weights_only=False)["model"]
              for folder in (forked, started)]
    assert states[0].keys() == states[1].keys()
    for name, value in states[0].items():
        assert torch.equal(value, states[1][name]), name
    startup = [json.loads((folder / "result.json").read_text())["startup"] for folder in (forked, started)]
    assert "import_torch" not in startup[0], startup[0]  # the server imported it, once, before forking the ranks
    assert "import_torch" in startup[1], startup[1]
