"""Checkpoint promises at their edges: never a silent restart from scratch, never code execution on
load, every required key checked, damage found by CRC, and no rank runs ahead of a half-written file."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from support import ROOT, clean_environ

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

# What an orch checkpoint must hold, stated independently of checkpoint.REQUIRED_KEYS.
REQUIRED = ("format", "model", "optimizer", "epoch", "step", "world_size", "batch_size", "ranks")


def state(epoch: int, step: int = 0) -> dict[str, Any]:
    return {"format": 1, "model": {"w": torch.from_numpy(np.full(64, epoch, dtype=np.float32))},
            "optimizer": {}, "epoch": epoch, "step": step, "world_size": 1, "batch_size": 1, "ranks": []}


@pytest.fixture
def single_rank() -> Iterator[Dist]:
    with process_group(rank=0, world_size=1, local_rank=0, master_addr="127.0.0.1", master_port=free_port(),
                       choice=CPU, timeout=30, collective_timeout=30) as ctx:
        yield ctx


# --- read_checkpoint: every refusal ---------------------------------------------------------------

@pytest.mark.parametrize("missing", REQUIRED)
def test_a_checkpoint_missing_any_required_key_is_refused(tmp_path: Path, missing: str) -> None:
    incomplete = {k: v for k, v in state(1).items() if k != missing}
    path = tmp_path / LATEST
    torch.save(incomplete, path)
    with pytest.raises(CheckpointError) as info:
        read_checkpoint(path)
    assert info.value.message == f"checkpoint {path} is not an orch checkpoint (missing {missing})"
    torch.save({"format": 1}, path)
    with pytest.raises(CheckpointError, match=r"\(missing model, optimizer, epoch, step, world_size, batch_size, "
                                              r"ranks\)"):
        read_checkpoint(path)


def test_a_checkpoint_with_every_required_key_loads(tmp_path: Path) -> None:
    path = tmp_path / LATEST
    torch.save(state(4, step=7), path)
    loaded = read_checkpoint(path)
    assert (loaded["epoch"], loaded["step"]) == (4, 7)
    assert torch.equal(loaded["model"]["w"], torch.full((64,), 4.0))


@pytest.mark.parametrize("value", [[state(1)], "text", 3])
def test_a_checkpoint_that_is_not_a_mapping_is_refused(tmp_path: Path, value: object) -> None:
    path = tmp_path / LATEST
    torch.save(value, path)
    with pytest.raises(CheckpointError, match=r"not an orch checkpoint \(missing a mapping\)"):
        read_checkpoint(path)


@pytest.mark.parametrize(("fmt", "ok"), [(0, False), (1, True), (2, False)])
def test_only_format_1_is_read(tmp_path: Path, fmt: int, ok: bool) -> None:
    path = tmp_path / LATEST
    torch.save({**state(1), "format": fmt}, path)
    if ok:
        assert read_checkpoint(path)["format"] == 1
    else:
        with pytest.raises(CheckpointError, match=f"has format {fmt}, expected 1"):
            read_checkpoint(path)


class _Payload:
    """Unpickling this calls Path.touch: what a malicious checkpoint would do with os.system."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.marker,))


def test_loading_never_runs_code_from_the_file(tmp_path: Path) -> None:
    """weights_only=True: a pickled callable is refused, and it never runs."""
    marker = tmp_path / "code-ran"
    path = tmp_path / LATEST
    torch.save({**state(1), "extra": _Payload(marker)}, path)
    with pytest.raises(CheckpointError) as info:
        read_checkpoint(path)
    assert not marker.exists(), "unpickling ran code from the checkpoint"
    assert "holds Python objects that only a full unpickle would load" in info.value.message
    assert "weights_only=True" in info.value.message  # and no advice to switch it off
    assert info.value.hint == "orch only resumes from its own checkpoints; move the file away"


def test_a_zip_that_is_not_a_torch_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / LATEST
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes.txt", "not a checkpoint")
    with pytest.raises(CheckpointError) as info:
        read_checkpoint(path)
    assert info.value.message.startswith(f"checkpoint {path} cannot be loaded: ")
    assert "\n" not in info.value.message


@pytest.mark.parametrize(("error", "shown"), [
    (RuntimeError("first line\nsecond line\n"), "first line"),
    (RuntimeError("  one line  "), "one line"),
    (EOFError(), "EOFError"),
    (pickle.UnpicklingError("invalid load key, 'x'."), "invalid load key, 'x'."),
])
def test_only_the_first_line_of_torchs_error_is_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      error: Exception, shown: str) -> None:
    path = write_atomic(state(1), tmp_path)

    def broken(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(torch, "load", broken)
    with pytest.raises(CheckpointError) as info:
        read_checkpoint(path)
    assert info.value.message == f"checkpoint {path} cannot be loaded: {shown}"
    assert info.value.hint == "the file is truncated or corrupt"


def test_weights_only_is_passed_to_torch_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    real = torch.load

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch, "load", spy)
    write_atomic(state(1), tmp_path)
    read_checkpoint(tmp_path / LATEST)
    assert seen and all(kw.get("weights_only") is True for kw in seen)


def test_a_flipped_bit_in_the_weights_is_found(tmp_path: Path) -> None:
    """torch.load does not check the zip CRCs; read_checkpoint does."""
    path = write_atomic(state(1), tmp_path)
    with zipfile.ZipFile(path) as archive:
        member = next(i for i in archive.infolist() if "/data/" in i.filename)
    data = bytearray(path.read_bytes())
    # the member's bytes start after its local header (30 bytes + name + extra field)
    name_len = int.from_bytes(data[member.header_offset + 26:member.header_offset + 28], "little")
    extra_len = int.from_bytes(data[member.header_offset + 28:member.header_offset + 30], "little")
    start = member.header_offset + 30 + name_len + extra_len
    data[start + 5] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="fails its CRC-32 check"):
        read_checkpoint(path)


# --- write_atomic ---------------------------------------------------------------------------------

def test_write_creates_the_folder_and_rotates_latest_into_previous(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "checkpoints"
    assert write_atomic(state(1), folder) == folder / LATEST
    assert not (folder / PREVIOUS).exists()
    for epoch in (2, 3):
        write_atomic(state(epoch), folder)
        assert read_checkpoint(folder / LATEST)["epoch"] == epoch
        assert read_checkpoint(folder / PREVIOUS)["epoch"] == epoch - 1
    assert sorted(p.name for p in folder.iterdir()) == [LATEST, PREVIOUS]


def test_write_without_hard_links_copies_latest_to_previous(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """File systems without hard links (some network and FUSE mounts): previous.pt is a copy."""
    write_atomic(state(1), tmp_path)

    def no_links(src: object, dst: object) -> None:
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    (tmp_path / f"{TMP_PREFIX}{PREVIOUS}.{os.getpid()}").write_bytes(b"stale")  # a killed writer's leftover
    write_atomic(state(2), tmp_path)
    assert read_checkpoint(tmp_path / LATEST)["epoch"] == 2
    assert read_checkpoint(tmp_path / PREVIOUS)["epoch"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [LATEST, PREVIOUS]


def test_previous_is_the_old_latest_itself(tmp_path: Path) -> None:
    """A hard link of the old latest.pt (no copy of gigabytes), even when a killed writer left its
    temporary link behind."""
    write_atomic(state(1), tmp_path)
    old = (tmp_path / LATEST).stat().st_ino
    (tmp_path / f"{TMP_PREFIX}{PREVIOUS}.{os.getpid()}").write_bytes(b"stale")
    write_atomic(state(2), tmp_path)
    assert (tmp_path / PREVIOUS).stat().st_ino == old
    assert (tmp_path / LATEST).stat().st_ino != old


def test_write_and_read_leave_no_file_open(tmp_path: Path) -> None:
    def open_fds() -> set[str]:
        return set(os.listdir("/proc/self/fd"))

    write_atomic(state(1), tmp_path)
    before = open_fds()
    for epoch in (2, 3):
        write_atomic(state(epoch), tmp_path)
        read_checkpoint(tmp_path / LATEST)
    assert open_fds() <= before


def test_numpy_gaussian_state_round_trips() -> None:
    """After an odd number of normal draws numpy's legacy generator holds a cached gaussian."""
    np.random.seed(3)
    np.random.standard_normal()
    saved = capture_rng(torch.device("cpu"))
    expected = np.random.standard_normal(3)
    np.random.seed(99)
    restore_rng(saved, torch.device("cpu"))
    assert np.array_equal(np.random.standard_normal(3), expected)
    np.random.seed(4)
    saved = capture_rng(torch.device("cpu"))  # no cached gaussian
    expected = np.random.standard_normal(3)
    np.random.standard_normal()
    restore_rng(saved, torch.device("cpu"))
    assert np.array_equal(np.random.standard_normal(3), expected)


def test_a_gpu_checkpoint_resumed_on_cpu_does_not_touch_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    saved = capture_rng(torch.device("cpu"))
    saved["cuda"] = torch.zeros(16, dtype=torch.uint8)  # as written by a GPU rank

    def no_cuda(*args: object, **kwargs: object) -> None:
        raise AssertionError("restore_rng set the CUDA RNG of a CPU rank")

    monkeypatch.setattr(torch.cuda, "set_rng_state", no_cuda)
    restore_rng(saved, torch.device("cpu"))
    saved["cuda"] = None
    restore_rng(saved, torch.device("cpu"))


# --- resume: never a silent restart ---------------------------------------------------------------

def test_resume_with_no_checkpoint_starts_from_scratch(tmp_path: Path, single_rank: Dist) -> None:
    assert Checkpointer(tmp_path, single_rank).resume() is None
    assert Checkpointer(tmp_path / "never-created", single_rank).resume() is None


@pytest.mark.parametrize("damage", [b"", b"PK\x03\x04 broken", b"not a zip at all"])
def test_resume_when_the_only_checkpoint_is_damaged_stops(tmp_path: Path, single_rank: Dist,
                                                          damage: bytes) -> None:
    (tmp_path / LATEST).write_bytes(damage)
    with pytest.raises(CheckpointError) as info:
        Checkpointer(tmp_path, single_rank).resume()
    assert str(tmp_path / LATEST) in info.value.message
    assert f"no {PREVIOUS}" in info.value.message
    assert (tmp_path / LATEST).read_bytes() == damage, "the damaged file is left for the user"


def test_resume_when_only_previous_exists_uses_it_out_loud(tmp_path: Path, single_rank: Dist,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    write_atomic(state(5, step=9), tmp_path)
    os.replace(tmp_path / LATEST, tmp_path / PREVIOUS)
    loaded = Checkpointer(tmp_path, single_rank).resume()
    assert loaded is not None and (loaded["epoch"], loaded["step"]) == (5, 9)
    err = capsys.readouterr().err
    assert f"{tmp_path / LATEST} is missing" in err
    assert f"resuming from {tmp_path / PREVIOUS} (epoch 6, step 9)" in err


def test_resume_when_latest_is_missing_and_previous_damaged_stops(tmp_path: Path, single_rank: Dist) -> None:
    (tmp_path / PREVIOUS).write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(CheckpointError) as info:
        Checkpointer(tmp_path, single_rank).resume()
    assert f"{tmp_path / LATEST} is missing" in info.value.message
    assert str(tmp_path / PREVIOUS) in info.value.message


def test_resume_prefers_a_good_latest_and_leaves_files_alone(tmp_path: Path, single_rank: Dist,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    write_atomic(state(1), tmp_path)
    write_atomic(state(2), tmp_path)
    loaded = Checkpointer(tmp_path, single_rank).resume()
    assert loaded is not None and loaded["epoch"] == 2
    assert "warning" not in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == [LATEST, PREVIOUS]


def test_clean_temporary_removes_only_temporary_files(tmp_path: Path, single_rank: Dist) -> None:
    write_atomic(state(1), tmp_path)
    (tmp_path / f"{TMP_PREFIX}{LATEST}.123").write_bytes(b"half")
    (tmp_path / f"{TMP_PREFIX}{PREVIOUS}.123").write_bytes(b"half")
    (tmp_path / "notes.txt").write_text("mine")
    Checkpointer(tmp_path, single_rank).clean_temporary()
    assert sorted(p.name for p in tmp_path.iterdir()) == [LATEST, "notes.txt"]


# --- two ranks: nobody runs ahead of rank 0's write -----------------------------------------------

_WORKER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    import numpy as np, torch
    from orchestrator.runtime import checkpoint
    from orchestrator.env.devices import CPU
    from orchestrator.runtime.dist import process_group

    rank, port, folder = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    real = checkpoint.write_atomic

    def slow_write(state, directory, *rest):  # rank 0 takes its time; the others must wait for it
        time.sleep(2.0)
        return real(state, directory, *rest)

    checkpoint.write_atomic = slow_write
    state = {"format": 1, "model": {"w": torch.from_numpy(np.zeros(4, dtype=np.float32))}, "optimizer": {},
             "epoch": 3, "step": 0, "world_size": 2, "batch_size": 1, "ranks": None}
    with process_group(rank=rank, world_size=2, local_rank=rank, master_addr="127.0.0.1", master_port=port,
                       choice=CPU, timeout=60, collective_timeout=60) as ctx:
        checkpoint.Checkpointer(folder, ctx).save(state, {"mine": rank})
        latest = folder / checkpoint.LATEST
        seen = checkpoint.read_checkpoint(latest) if latest.exists() else None
        print(json.dumps({"rank": rank, "epoch": seen and seen["epoch"],
                          "ranks": seen and [r["mine"] for r in seen["ranks"]]}), flush=True)
""")


def test_no_rank_returns_from_save_before_the_checkpoint_is_written(tmp_path: Path) -> None:
    port = free_port()
    env = clean_environ(PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(rank), str(port), str(tmp_path / "ckpt")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for rank in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    for proc, (_, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    for report in reports:
        assert report["epoch"] == 3, f"rank {report['rank']} returned from save() before latest.pt was written"
        assert report["ranks"] == [0, 1], "every rank's local values are gathered into the checkpoint"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_rng_state_is_restored_on_a_gpu_rank() -> None:
    device = torch.device("cuda", 0)
    torch.cuda.manual_seed(1)
    saved = capture_rng(device)
    expected = torch.rand(4, device=device)
    torch.cuda.manual_seed(99)
    restore_rng(saved, device)
    assert torch.equal(torch.rand(4, device=device), expected)
