"""Checkpoints: atomic writes survive kills at random moments; damage is named, fallback is loud."""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from orchestrator.env.devices import CPU
from orchestrator.local.rankenv import free_port
from orchestrator.runtime.checkpoint import (
    LATEST,
    PREVIOUS,
    TMP_PREFIX,
    Checkpointer,
    CheckpointError,
    capture_rng,
    read_checkpoint,
    restore_rng,
    write_atomic,
)
from orchestrator.runtime.dist import Dist, process_group


def state(epoch: int, size: int = 1000) -> dict[str, Any]:
    # numpy fills the tensor: a forked writer must not enter torch's OpenMP pool (it hangs after fork)
    weights = torch.from_numpy(np.full(size, epoch, dtype=np.float32))
    return {"format": 1, "model": {"w": weights}, "optimizer": {}, "epoch": epoch, "step": 0, "world_size": 1,
            "batch_size": 1, "ranks": []}


def test_write_then_read_keeps_previous(tmp_path: Path) -> None:
    write_atomic(state(1), tmp_path)
    assert not (tmp_path / PREVIOUS).exists()
    write_atomic(state(2), tmp_path)
    assert read_checkpoint(tmp_path / LATEST)["epoch"] == 2
    assert read_checkpoint(tmp_path / PREVIOUS)["epoch"] == 1
    assert not list(tmp_path.glob(f"{TMP_PREFIX}*"))


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "not_orch"])
def test_damaged_checkpoint_is_named(tmp_path: Path, damage: str) -> None:
    path = write_atomic(state(1), tmp_path)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(bytes(random.Random(0).randrange(256) for _ in range(len(data))))
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        torch.save({"weights": torch.zeros(2)}, path)
    with pytest.raises(CheckpointError) as info:
        read_checkpoint(path)
    assert str(path) in info.value.message


@pytest.fixture
def single_rank() -> Iterator[Dist]:
    with process_group(rank=0, world_size=1, local_rank=0, master_addr="127.0.0.1", master_port=free_port(),
                       choice=CPU, timeout=30, collective_timeout=30) as ctx:
        yield ctx


def test_resume_falls_back_to_previous_out_loud(tmp_path: Path, single_rank: Dist,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    write_atomic(state(1), tmp_path)
    write_atomic(state(2), tmp_path)
    (tmp_path / LATEST).write_bytes((tmp_path / LATEST).read_bytes()[:100])
    (tmp_path / f"{TMP_PREFIX}{LATEST}.999").write_bytes(b"half a write")
    loaded = Checkpointer(tmp_path, single_rank).resume()
    assert loaded is not None and loaded["epoch"] == 1
    err = capsys.readouterr().err
    assert "warning" in err and str(tmp_path / LATEST) in err and str(tmp_path / PREVIOUS) in err
    assert list(tmp_path.glob(f"{LATEST}.corrupt-*")), "the damaged file is kept aside, not overwritten"
    assert not list(tmp_path.glob(f"{TMP_PREFIX}*")), "temporary files of a killed writer are removed"


def test_resume_with_both_damaged_is_an_error_naming_both(tmp_path: Path, single_rank: Dist) -> None:
    write_atomic(state(1), tmp_path)
    write_atomic(state(2), tmp_path)
    for name in (LATEST, PREVIOUS):
        (tmp_path / name).write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(CheckpointError) as info:
        Checkpointer(tmp_path, single_rank).resume()
    assert str(tmp_path / LATEST) in info.value.message and str(tmp_path / PREVIOUS) in info.value.message


def test_resume_without_checkpoint_and_save_round_trip(tmp_path: Path, single_rank: Dist) -> None:
    checkpointer = Checkpointer(tmp_path / "ckpt", single_rank)
    assert checkpointer.resume() is None
    checkpointer.save({**state(3), "ranks": None}, {"tally": (1.5, 2, 3)})
    loaded = checkpointer.resume()
    assert loaded is not None and loaded["epoch"] == 3 and loaded["ranks"][0]["tally"] == (1.5, 2, 3)
    assert set(loaded["ranks"][0]["rng"]) == {"torch", "cuda", "python", "numpy"}


def test_rng_capture_restore_round_trip() -> None:
    torch.manual_seed(1)
    random.seed(2)
    np.random.seed(3)
    saved = capture_rng(torch.device("cpu"))
    expected = (torch.rand(3), random.random(), np.random.rand())
    torch.manual_seed(99)
    random.seed(99)
    np.random.seed(99)
    restore_rng(saved, torch.device("cpu"))
    again = (torch.rand(3), random.random(), np.random.rand())
    assert torch.equal(expected[0], again[0]) and expected[1:] == again[1:]


def test_writer_killed_at_random_moments_always_leaves_a_loadable_latest(tmp_path: Path) -> None:
    """SIGKILL a process that keeps writing checkpoints, 40 times at random moments: latest.pt
    always loads, and is the last checkpoint reported complete or the one being written."""
    size = 1_000_000  # 4 MB per checkpoint
    began = time.perf_counter()
    write_atomic(state(1, size), tmp_path)
    window = 3 * (time.perf_counter() - began)  # kills land before, during and after writes
    rng = random.Random(1234)
    mid_write = 0
    for _ in range(40):
        latest = tmp_path / LATEST
        start = read_checkpoint(latest)["epoch"] + 1
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the writer: never returns into pytest
            try:
                os.close(read_fd)
                epoch = start
                while True:
                    write_atomic(state(epoch, size), tmp_path)
                    os.write(write_fd, f"{epoch}\n".encode())
                    epoch += 1
            finally:
                os._exit(1)
        os.close(write_fd)
        time.sleep(rng.uniform(0.0, window))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status), "the writer stopped by itself"
        with os.fdopen(read_fd) as fh:
            reported = [int(x) for x in fh.read().split()]
        done = reported[-1] if reported else start - 1
        loaded = read_checkpoint(latest)  # always there, always complete
        assert loaded["epoch"] in (done, done + 1)
        assert bool((loaded["model"]["w"] == float(loaded["epoch"])).all())
        if (tmp_path / PREVIOUS).exists():
            assert read_checkpoint(tmp_path / PREVIOUS)["epoch"] <= loaded["epoch"]
        mid_write += bool(list(tmp_path.glob(f"{TMP_PREFIX}*")))
        for stale in tmp_path.glob(f"{TMP_PREFIX}*"):
            stale.unlink()
    assert mid_write >= 5, f"only {mid_write} of 40 kills hit a write in progress"
