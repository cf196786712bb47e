"""Interrupted and damaged checkpoints (complements tests/runtime/test_runtime_checkpoint.py, which kills
the writer at random times): here the writer is killed at every step of ``write_atomic`` and at
random byte offsets inside ``torch.save``; damaged files (every truncation length class, hundreds
of single-byte flips) are refused naming the file or load unchanged, never as different weights;
and ``orch run --resume`` on a damaged folder falls back out loud or stops, never restarts silently.
"""

from __future__ import annotations

import io
import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from orchestrator.runtime import checkpoint
from orchestrator.runtime.checkpoint import (
    LATEST,
    PREVIOUS,
    TMP_PREFIX,
    CheckpointError,
    read_checkpoint,
    write_atomic,
)

SIZE = 200_000  # floats per checkpoint (0.8 MB): big enough that a write takes several syscalls
KILL_ROUNDS = 32
FLIPS = 400


def state(epoch: int, size: int = SIZE) -> dict[str, Any]:
    return {
        "format": 1,
        "model": {"w": torch.full((size,), float(epoch))},
        "optimizer": {"lr": 0.1 * epoch},
        "epoch": epoch,
        "step": 0,
        "world_size": 1,
        "batch_size": 1,
        "ranks": [],
    }


def assert_is_state(loaded: dict[str, Any], epoch: int, size: int = SIZE) -> None:
    assert loaded["epoch"] == epoch
    assert torch.equal(loaded["model"]["w"], torch.full((size,), float(epoch)))
    assert loaded["optimizer"] == {"lr": 0.1 * epoch}


def in_killed_child(action: Callable[[], None], timeout: float = 60) -> None:
    """Run ``action`` in a forked child, which must end by SIGKILL (the action kills it).

    The child must not run torch kernels: after a fork, a parallel kernel waits forever for the
    parent's OpenMP threads. So the states are built before forking; torch.save only copies bytes.
    """
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            action()
        finally:
            os._exit(99)  # the action was supposed to kill us before this
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"the writer did not end within {timeout} s")
        time.sleep(0.01)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, f"child status {status:#x}"


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


# --- the writer killed at each step of write_atomic -------------------------------------------

STEPS = [
    "fsync of the new file",
    "link of latest to the previous temp",
    "replace of previous",
    "replace of latest",
    "fsync of the folder",
]


def _killing_at(step: str) -> Callable[[], None]:
    """Patch (in the child only) the os call after ``step`` to kill the process right after it."""

    new = state(2)

    def act() -> None:
        real = {"fsync": os.fsync, "link": os.link, "replace": os.replace}
        calls: dict[str, int] = {"replace": 0}

        def fsync(fd: int) -> None:
            real["fsync"](fd)
            if step == "fsync of the new file" and not os.path.isdir(f"/proc/self/fd/{fd}"):
                die()
            if step == "fsync of the folder" and os.path.isdir(f"/proc/self/fd/{fd}"):
                die()

        def link(src: Any, dst: Any) -> None:
            real["link"](src, dst)
            if step == "link of latest to the previous temp":
                die()

        def replace(src: Any, dst: Any) -> None:
            real["replace"](src, dst)
            calls["replace"] += 1
            if step == "replace of previous" and Path(dst).name == PREVIOUS:
                die()
            if step == "replace of latest" and Path(dst).name == LATEST:
                die()

        checkpoint.os.fsync = fsync  # type: ignore[assignment]
        checkpoint.os.link = link  # type: ignore[assignment]
        checkpoint.os.replace = replace  # type: ignore[assignment]
        write_atomic(new, DIRECTORY[0])

    return act


DIRECTORY: list[Path] = []  # the folder the child writes to (set before forking)


@pytest.mark.parametrize("step", STEPS)
def test_writer_killed_after_each_step_leaves_old_or_new(step: str, tmp_path: Path) -> None:
    write_atomic(state(0), tmp_path)
    write_atomic(state(1), tmp_path)
    DIRECTORY[:] = [tmp_path]
    in_killed_child(_killing_at(step))
    latest = read_checkpoint(tmp_path / LATEST)
    old_or_new = latest["epoch"]
    assert old_or_new in (1, 2)
    assert_is_state(latest, old_or_new)
    # up to the replace of latest the old state is current; from then on the new one
    assert old_or_new == (2 if step in ("replace of latest", "fsync of the folder") else 1)
    previous = read_checkpoint(tmp_path / PREVIOUS)
    assert previous["epoch"] in (0, 1) and previous["epoch"] <= old_or_new
    assert_is_state(previous, previous["epoch"])


# --- the writer killed at random byte offsets inside torch.save -------------------------------


def _killing_after(n_bytes: int, epoch: int, directory: Path) -> Callable[[], None]:
    new = state(epoch)

    def act() -> None:
        real_save = torch.save

        def partial_save(obj: Any, fh: Any, *args: Any, **kwargs: Any) -> None:
            buffer = io.BytesIO()
            real_save(obj, buffer, *args, **kwargs)
            data = buffer.getvalue()
            fh.write(data[: min(n_bytes, len(data) - 1)])
            fh.flush()
            os.fsync(fh.fileno())
            die()

        checkpoint.torch.save = partial_save  # type: ignore[assignment]
        write_atomic(new, directory)

    return act


def test_writer_killed_mid_save_at_random_offsets(tmp_path: Path) -> None:
    """KILL_ROUNDS kills, each after a random number of bytes of the new file: latest.pt stays the
    last complete state, and resuming code ignores (and cleans) the torn temporary file."""
    size = len(_encoded(state(1)))
    rng = random.Random(20240506)
    write_atomic(state(1), tmp_path)
    for round_ in range(KILL_ROUNDS):
        in_killed_child(_killing_after(rng.randrange(0, size), 2 + round_, tmp_path))
        assert_is_state(read_checkpoint(tmp_path / LATEST), 1 + round_)
        assert list(tmp_path.glob(f"{TMP_PREFIX}*")), "the torn temporary file is left behind"
        write_atomic(state(2 + round_), tmp_path)  # the next, complete save
        assert_is_state(read_checkpoint(tmp_path / LATEST), 2 + round_)
        assert_is_state(read_checkpoint(tmp_path / PREVIOUS), 1 + round_)


def _encoded(obj: Any) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


# --- damaged files: named, never loaded as different weights ----------------------------------


def test_every_truncation_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = write_atomic(state(1, size=1000), tmp_path)
    data = path.read_bytes()
    lengths = sorted(
        {
            0,
            1,
            2,
            21,
            22,
            100,
            len(data) // 2,
            len(data) - 23,
            len(data) - 22,
            len(data) - 1,
            *random.Random(7).sample(range(len(data)), 40),
        }
    )
    for length in lengths:
        path.write_bytes(data[:length])
        with pytest.raises(CheckpointError) as info:
            read_checkpoint(path)
        assert str(path) in info.value.message, length
        assert info.value.hint


def test_byte_flips_are_refused_or_harmless(tmp_path: Path) -> None:
    """FLIPS single-byte flips at random offsets: each is refused naming the file, or (padding,
    unused header bytes) the file still loads to exactly the saved state. Before the CRC check in
    read_checkpoint, about two thirds of these loaded silently as different weights."""
    original = state(3, size=1000)
    path = write_atomic(original, tmp_path)
    data = path.read_bytes()
    rng = random.Random(99)
    refused = harmless = 0
    for _ in range(FLIPS):
        offset = rng.randrange(len(data))
        damaged = bytearray(data)
        damaged[offset] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(damaged))
        try:
            loaded = read_checkpoint(path)
        except CheckpointError as exc:
            assert str(path) in exc.message
            refused += 1
            continue
        assert_is_state(loaded, 3, size=1000)
        harmless += 1
    assert refused > FLIPS // 2, (refused, harmless)


# --- orch run --resume on a damaged job folder: loud fallback or a clear stop -----------------


@pytest.fixture
def finished(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Callable[[], Path]:
    """A copy of a finished 1-rank smoke run with two epochs (latest = epoch 2, previous = epoch 1); the run is
    made once per session (``sharedruns.once``), each test damages a copy of its own."""
    import sharedruns
    from support import ORCH, clean_environ

    def make(root: Path) -> Path:
        proc = subprocess.run(
            [ORCH, "run", "smoke", "--nproc", "1", "--job-root", str(root / "jobs"), "--json", "epochs=2",
             "samples=256", "test_samples=64"],
            capture_output=True, text=True, env=clean_environ(), timeout=300, check=False,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return Path(json.loads(proc.stdout)["job_dir"])

    source = sharedruns.once(tmp_path_factory, "smoke-1rank-2epochs-256-samples", make)
    copies: list[Path] = []

    def copy() -> Path:
        copies.append(sharedruns.copy_job(source, tmp_path / f"copy{len(copies)}"))
        return copies[-1]

    return copy


def resume(job_dir: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    from support import ORCH, clean_environ

    return subprocess.run(
        [ORCH, "run", "--resume", str(job_dir), *overrides],
        capture_output=True,
        text=True,
        env=clean_environ(),
        timeout=300,
        check=False,
    )


def flip_one_byte_of_the_weights(path: Path) -> None:
    """Flip one bit in the middle of the largest tensor's bytes (a silent change without a CRC check)."""
    import struct
    import zipfile

    with zipfile.ZipFile(path) as archive:
        member = max((i for i in archive.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
    data = bytearray(path.read_bytes())
    name_len, extra_len = struct.unpack("<HH", data[member.header_offset + 26 : member.header_offset + 30])
    start = member.header_offset + 30 + name_len + extra_len
    data[start + member.file_size // 2] ^= 0x40
    path.write_bytes(bytes(data))


@pytest.mark.slow
def test_resume_from_a_corrupt_latest_falls_back_out_loud(finished: Callable[[], Path]) -> None:
    job_dir = finished()
    flip_one_byte_of_the_weights(job_dir / "checkpoints" / LATEST)
    proc = resume(job_dir, "epochs=3")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    assert "warning" in output and str(job_dir / "checkpoints" / LATEST) in output
    assert "CRC-32" in output and f"resuming from {job_dir / 'checkpoints' / PREVIOUS}" in output
    assert "resuming from checkpoint at epoch 2, step 0" in output  # previous = after epoch 1
    epochs = [json.loads(line)["epoch"] for line in (job_dir / "metrics.jsonl").read_text().splitlines()]
    assert epochs == [1, 2, 3]
    assert list((job_dir / "checkpoints").glob(f"{LATEST}.corrupt-*")), "the damaged file is kept aside"


@pytest.mark.slow
def test_resume_with_every_checkpoint_damaged_stops_and_trains_nothing(finished: Callable[[], Path]) -> None:
    job_dir = finished()
    for name in (LATEST, PREVIOUS):
        flip_one_byte_of_the_weights(job_dir / "checkpoints" / name)
    metrics_before = (job_dir / "metrics.jsonl").read_text()
    proc = resume(job_dir, "epochs=3")
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output[-3000:]
    assert (
        str(job_dir / "checkpoints" / LATEST) in output and str(job_dir / "checkpoints" / PREVIOUS) in output
    )
    assert "orch: error:" in output and "HINT:" in output and "Traceback" not in output
    assert (job_dir / "metrics.jsonl").read_text() == metrics_before, "no epoch ran from scratch"
