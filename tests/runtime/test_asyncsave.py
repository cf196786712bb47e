"""Checkpoints off the training thread (runtime/asyncsave.py through ``Checkpointer(background=True)``): the host
copy shares nothing with the live state, a background save loads back identical, at most one write is in
flight, a failed write surfaces as the synchronous save's error, and a writer killed mid-write leaves the
previous ``latest.pt``."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from support import ROOT, clean_environ

from orchestrator.env.devices import CPU
from orchestrator.errors import OrchError
from orchestrator.local.rankenv import free_port
from orchestrator.records.resumecheck import sidecar_path
from orchestrator.runtime import checkpoint
from orchestrator.runtime.asyncsave import BackgroundWriter, HostStage
from orchestrator.runtime.checkpoint import LATEST, PREVIOUS, TMP_PREFIX, Checkpointer, read_checkpoint
from orchestrator.runtime.dist import Dist, process_group


@pytest.fixture
def single_rank() -> Iterator[Dist]:
    with process_group(rank=0, world_size=1, local_rank=0, master_addr="127.0.0.1", master_port=free_port(),
                       choice=CPU, timeout=30, collective_timeout=30) as ctx:
        yield ctx


def live_state() -> dict[str, Any]:
    """A model and an optimizer after two steps: what the trainer hands to a save."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.BatchNorm1d(32), torch.nn.Linear(32, 4))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(2):
        opt.zero_grad()
        model(torch.randn(8, 16)).sum().backward()
        opt.step()
    return {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 1, "step": 3, "world_size": 1,
            "batch_size": 8, "scaler": None, "params": {"lr": 0.01}, "job": "t", "_live": (model, opt)}


def assert_same(a: Any, b: Any) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    else:
        assert a == b


# --- the host copy -------------------------------------------------------------------------------------

def test_the_host_copy_is_equal_and_shares_nothing_with_the_live_state() -> None:
    state = live_state()
    model, opt = state.pop("_live")
    copied, event = HostStage().copy(state)
    assert event is None  # CPU tensors: the copies are complete on return
    assert_same(state, copied)
    live = [t for t in [*state["model"].values(), *(v for s in state["optimizer"]["state"].values()
                                                   for v in s.values())] if isinstance(t, torch.Tensor)]
    kept = [t for t in [*copied["model"].values(), *(v for s in copied["optimizer"]["state"].values()
                                                    for v in s.values())] if isinstance(t, torch.Tensor)]
    assert not {t.data_ptr() for t in live} & {t.data_ptr() for t in kept}
    before = {k: v.clone() for k, v in copied["model"].items()}
    with torch.no_grad():  # the next optimizer step changes the live tensors in place ...
        for p in model.parameters():
            p.add_(1.0)
    opt.state[next(iter(model.parameters()))]["exp_avg"].add_(1.0)
    assert_same(before, copied["model"])  # ... never the copy
    assert isinstance(copied["model"], OrderedDict)
    assert vars(copied["model"])["_metadata"] == vars(state["model"])["_metadata"]  # versions (load_state_dict)


def test_the_buffers_are_reused_from_save_to_save_and_tied_tensors_stay_tied() -> None:
    weight = torch.randn(64, 64)
    stage = HostStage()
    first, _ = stage.copy({"a": weight, "tied": weight, "b": torch.zeros(3)})
    assert first["a"] is first["tied"]
    pointers = [b.data_ptr() for b in stage.buffers]
    assert len(pointers) == 2 and stage.nbytes == (64 * 64 + 3) * 4  # one host copy of the state
    weight.add_(1.0)
    second, _ = stage.copy({"a": weight, "tied": weight, "b": torch.zeros(3)})
    assert [b.data_ptr() for b in stage.buffers] == pointers and torch.equal(second["a"], weight)
    stage.copy({"a": torch.zeros(2, dtype=torch.float64)})  # another shape and dtype: a new buffer, the rest freed
    assert len(stage.buffers) == 1 and stage.buffers[0].dtype == torch.float64


# --- the background write ---------------------------------------------------------------------------

def test_a_background_save_loads_back_identical(tmp_path: Path, single_rank: Dist) -> None:
    state = live_state()
    state.pop("_live")
    saver = Checkpointer(tmp_path, single_rank, background=True)
    saver.save(state, {"tally": {"loss_sum": 1.5, "sums": [2.0], "count": 8, "skipped": 0}})
    saver.finish()
    loaded = read_checkpoint(tmp_path / LATEST)
    assert_same(state["model"], loaded["model"])
    assert_same(state["optimizer"], loaded["optimizer"])
    assert (loaded["epoch"], loaded["step"], loaded["ranks"][0]["tally"]["count"]) == (1, 3, 8)
    assert saver.write_s > 0
    resumed = Checkpointer(tmp_path, single_rank, background=True).resume()
    assert resumed is not None
    assert_same(loaded["model"], resumed["model"])


def test_at_most_one_write_is_in_flight_and_a_new_save_waits_for_it(tmp_path: Path, single_rank: Dist,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    gate, entered = threading.Event(), threading.Event()
    order: list[str] = []
    real = checkpoint.write_atomic

    def gated(state: Any, directory: Path, job: Any = None) -> Path:
        order.append(f"start {state['epoch']}")
        entered.set()
        assert gate.wait(30)
        path = real(state, directory, job)
        order.append(f"end {state['epoch']}")
        return path

    monkeypatch.setattr(checkpoint, "write_atomic", gated)
    saver = Checkpointer(tmp_path, single_rank, background=True)
    base = {"model": {"w": torch.zeros(4)}, "optimizer": {}, "step": 0, "world_size": 1, "batch_size": 1}
    saver.save({**base, "epoch": 1}, {})  # returns at once: the write waits at the gate
    assert saver.writer.in_flight
    assert entered.wait(30) and order == ["start 1"]  # the writer thread may take a moment to begin
    second = threading.Thread(target=saver.save, args=({**base, "epoch": 2}, {}))
    second.start()
    time.sleep(0.3)
    assert second.is_alive() and order == ["start 1"]  # the second save waits for the first write
    gate.set()
    second.join(30)
    saver.finish()
    assert order == ["start 1", "end 1", "start 2", "end 2"]
    assert read_checkpoint(tmp_path / LATEST)["epoch"] == 2 and read_checkpoint(tmp_path / PREVIOUS)["epoch"] == 1


def no_space(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("surfaces", ["at the next save", "at the end"])
def test_a_failed_background_write_is_the_synchronous_error_at_the_next_save_or_the_end(
        tmp_path: Path, single_rank: Dist, monkeypatch: pytest.MonkeyPatch, surfaces: str) -> None:
    base = {"model": {"w": torch.ones(4096)}, "optimizer": {}, "step": 0, "world_size": 1, "batch_size": 1}
    saver = Checkpointer(tmp_path, single_rank, background=True)
    saver.save({**base, "epoch": 1}, {})
    saver.wait()
    monkeypatch.setattr(checkpoint.os, "fsync", no_space)
    saver.save({**base, "epoch": 2}, {})  # the disk fills in the background: nothing raised here
    saver.writer._thread.join()  # type: ignore[union-attr]
    monkeypatch.undo()
    with pytest.raises(OrchError) as caught:
        if surfaces == "at the next save":
            saver.save({**base, "epoch": 3}, {})
        else:
            saver.finish()
    assert str(tmp_path / LATEST) in caught.value.message and "No space left on device" in caught.value.message
    assert caught.value.hint and "free space" in caught.value.hint
    assert read_checkpoint(tmp_path / LATEST)["epoch"] == 1  # the newest complete checkpoint stays
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(TMP_PREFIX)]
    saver.finish()  # said once: the error is not raised a second time


def test_close_on_the_exception_path_says_the_failed_write_without_raising(capsys: pytest.CaptureFixture[str]) -> None:
    def failing(state: Any) -> Path:
        raise OrchError("cannot write /x/latest.pt: No space left on device", hint="free space")

    writer = BackgroundWriter(failing)
    writer.start({"epoch": 1})
    writer.close()
    err = capsys.readouterr().err
    assert "orch: error: the checkpoint written in the background failed: cannot write /x/latest.pt" in err
    assert "HINT: free space" in err
    writer.close()  # nothing left in flight, nothing to say
    assert capsys.readouterr().err == ""


# --- SIGKILL during a background write ---------------------------------------------------------------

# The child: a first checkpoint written in full, then a background save whose torch.save writes half its bytes
# and stalls (a slow disk) while the training thread goes on; the test kills it there with SIGKILL.
SLOW_WRITER = """
import io, sys, time
from pathlib import Path
import torch
from orchestrator.runtime import checkpoint
from orchestrator.runtime.asyncsave import BackgroundWriter, HostStage

folder = Path(sys.argv[1])
def state(epoch):
    return {"format": 1, "model": {"w": torch.full((2_000_000,), float(epoch))}, "optimizer": {}, "epoch": epoch,
            "step": 0, "world_size": 1, "batch_size": 1, "ranks": []}
checkpoint.write_atomic(state(1), folder)
real_save = checkpoint.torch.save
def slow_save(obj, fh, **kwargs):
    buffer = io.BytesIO()
    real_save(obj, buffer)
    data = buffer.getvalue()
    fh.write(data[: len(data) // 2])
    fh.flush()
    print("half", flush=True)
    time.sleep(120)
    fh.write(data[len(data) // 2:])
checkpoint.torch.save = slow_save
writer = BackgroundWriter(lambda s: checkpoint.write_atomic(s, folder))
writer.start(*HostStage().copy(state(2)))
live = torch.zeros(1000)
while True:  # the training thread keeps going
    live += 1
    time.sleep(0.01)
"""


def test_a_kill_during_a_background_write_leaves_the_previous_latest(tmp_path: Path, single_rank: Dist) -> None:
    folder = tmp_path / "checkpoints"
    proc = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, str(folder)], stdout=subprocess.PIPE, text=True,
                            cwd=ROOT, env=clean_environ())
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "half"
        [tmp] = [p for p in folder.iterdir() if p.name.startswith(TMP_PREFIX)]
        assert tmp.stat().st_size > 1_000_000  # the new checkpoint is half written
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    loaded = read_checkpoint(folder / LATEST)  # complete, CRCs good: the previous save
    assert loaded["epoch"] == 1 and torch.equal(loaded["model"]["w"], torch.full((2_000_000,), 1.0))
    assert not (folder / PREVIOUS).exists()
    resumed = Checkpointer(folder, single_rank, background=True).resume()  # no warning, no fallback needed
    assert resumed is not None and resumed["epoch"] == 1
    assert not [p.name for p in folder.iterdir() if p.name.startswith(TMP_PREFIX)]  # the half-written file went
    assert not sidecar_path(folder / LATEST).exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")
def test_the_writer_thread_yields_the_cpu_to_the_training_threads() -> None:
    seen: list[int] = []

    def record(state: Any) -> Path:
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return Path(".")

    writer = BackgroundWriter(record)
    writer.start({})
    writer.wait()
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert seen == [min(19, mine + 10)] and os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine
