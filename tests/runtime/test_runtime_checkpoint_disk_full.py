"""A disk that fills up while rank 0 writes a checkpoint (ENOSPC, simulated: no mount needed): the save ends with
one orch error naming the file and the fix, the partial temporary file is removed (its space freed), and the
newest complete checkpoint stays loadable. Under a real ``orch run`` the rank's log ends with that error, no
traceback, and its outcome record says why."""

from __future__ import annotations

import errno
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from support import ORCH, clean_environ

from orchestrator.errors import OrchError
from orchestrator.runtime import checkpoint
from orchestrator.runtime.checkpoint import LATEST, PREVIOUS, TMP_PREFIX, read_checkpoint, write_atomic


def state(epoch: int) -> dict[str, Any]:
    return {"format": 1, "model": {"w": torch.from_numpy(np.full(4096, epoch, dtype=np.float32))}, "optimizer": {},
            "epoch": epoch, "step": 0, "world_size": 1, "batch_size": 1, "ranks": []}


def no_space(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def half_written(obj: object, fh: Any, **kwargs: object) -> None:
    fh.write(b"PK\x03\x04" + b"\0" * 3000)  # the disk fills part-way through torch.save
    no_space()


@pytest.mark.parametrize("where", ["torch.save", "fsync"])
def test_a_full_disk_while_saving_is_one_error_and_keeps_the_newest_checkpoint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    write_atomic(state(1), tmp_path)
    write_atomic(state(2), tmp_path)
    if where == "torch.save":
        monkeypatch.setattr(checkpoint.torch, "save", half_written)
    else:
        monkeypatch.setattr(checkpoint.os, "fsync", no_space)
    with pytest.raises(OrchError) as caught:
        write_atomic(state(3), tmp_path)
    monkeypatch.undo()
    error = caught.value
    assert str(tmp_path / LATEST) in error.message and "No space left on device" in error.message, error.message
    assert error.hint and "free space" in error.hint and "job root" in error.hint, error.hint
    assert read_checkpoint(tmp_path / LATEST)["epoch"] == 2
    assert read_checkpoint(tmp_path / PREVIOUS)["epoch"] == 1
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(TMP_PREFIX)]  # its space is freed


# Every rank of the run below: the fsync of a new checkpoint fails once a complete one exists (the disk filled
# up between the first checkpoint and the second).
FULL_AFTER_FIRST = """\
import errno, os
_fsync = os.fsync
def fsync(fd):
    name = os.readlink(f"/proc/self/fd/{fd}") if isinstance(fd, int) else ""
    folder, base = os.path.split(name)
    if base.startswith(".tmp-latest.pt.") and os.path.exists(os.path.join(folder, "latest.pt")):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return _fsync(fd)
os.fsync = fsync
"""


@pytest.mark.slow
def test_orch_run_on_a_disk_that_fills_ends_the_rank_with_one_error(tmp_path: Path) -> None:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(FULL_AFTER_FIRST)
    path = os.pathsep.join(p for p in [str(hook), os.environ.get("PYTHONPATH", "")] if p)
    proc = subprocess.run([ORCH, "run", "smoke", "--nproc", "1", "--job-root", str(tmp_path / "jobs"), "samples=64",
                           "test_samples=16", "epochs=3"], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env=clean_environ(PYTHONPATH=path))
    assert proc.returncode != 0, proc.stdout + proc.stderr
    [folder] = (tmp_path / "jobs").iterdir()
    latest = folder / "checkpoints" / LATEST
    log = (folder / "logs" / "local-rank0.out").read_text(encoding="utf-8")
    assert "Traceback" not in log and "Traceback" not in proc.stderr, log + proc.stderr
    tail = log.strip().splitlines()[-2:]
    assert tail[0].startswith("orch: error: rank 0: cannot write ") and str(latest) in tail[0], tail
    assert "No space left on device" in tail[0] and tail[1].startswith("HINT: free space"), tail
    assert "No space left on device" in proc.stderr, proc.stderr
    outcome = json.loads((folder / "logs" / "rank0.outcome.json").read_text(encoding="utf-8"))
    assert outcome["kind"] == "failed" and str(latest) in outcome["reason"], outcome
    assert "No space left on device" in outcome["reason"], outcome
    assert read_checkpoint(latest)["epoch"] == 1  # the newest complete checkpoint: loadable
    assert not [p.name for p in latest.parent.iterdir() if p.name.startswith(TMP_PREFIX)]
