"""GPU check: a checkpoint of CUDA tensors saved off the training thread (runtime/asyncsave.py): the host copy goes
to pinned buffers through copies queued on the current stream, the writer waits on their event, and the file
holds the values of the moment of the save even though the next optimizer step already ran on the GPU."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from gpu_support import CUDA, NO_CUDA

from orchestrator.runtime.asyncsave import BackgroundWriter, HostStage
from orchestrator.runtime.checkpoint import LATEST, read_checkpoint, write_atomic

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not CUDA, reason=NO_CUDA)]  # CUDA only, also in the dry run


def _tensor_pairs(original: Any, copied: Any) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """(a tensor of the state, its copy), walking both containers side by side."""
    if isinstance(original, torch.Tensor):
        yield original, copied
    elif isinstance(original, dict):
        for key, value in original.items():
            yield from _tensor_pairs(value, copied[key])
    elif isinstance(original, (list, tuple)):
        for value, twin in zip(original, copied, strict=True):
            yield from _tensor_pairs(value, twin)


def test_a_background_save_of_cuda_state_holds_the_values_of_the_save(tmp_path: Path,
                                                                     gpu_figure: Callable[[str], None]) -> None:
    """Proves: pinned host buffers, an event, and a file equal to the state at the save although the parameters
    changed on the GPU right after it. Figure: the training-thread stall against a synchronous save (1 GB)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(4)]).cuda()
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randn(64, 4096, device="cuda")).sum().backward()
    optimizer.step()
    state = {"format": 1, "model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 1, "step": 0,
             "world_size": 1, "batch_size": 64, "ranks": []}
    expected = {k: v.cpu() for k, v in model.state_dict().items()}
    stage = HostStage()
    stage.copy(state)  # the buffers exist from the first save on
    torch.cuda.synchronize()
    began = time.perf_counter()
    copied, event = stage.copy(state)
    stall = time.perf_counter() - began
    # pinned buffers for the CUDA tensors; the state's CPU tensors (Adam's step counts) get plain ones
    pairs = list(_tensor_pairs(state, copied))
    assert event is not None and any(o.device.type == "cpu" for o, _ in pairs)
    assert all(c.is_pinned() == (o.device.type == "cuda") for o, c in pairs), [
        (o.device, c.is_pinned()) for o, c in pairs]
    with torch.no_grad():  # the next step, queued behind the copies
        for p in model.parameters():
            p.add_(1.0)
    writer = BackgroundWriter(lambda s: write_atomic(s, tmp_path / "async"))
    writer.start(copied, event)
    writer.wait()
    loaded = read_checkpoint(tmp_path / "async" / LATEST)
    assert all(torch.equal(loaded["model"][k], v) for k, v in expected.items())
    torch.cuda.synchronize()
    began = time.perf_counter()
    write_atomic({**state, "model": model.state_dict()}, tmp_path / "sync")
    sync = time.perf_counter() - began
    gpu_figure(f"stall {stall * 1000:.0f} ms vs synchronous save {sync:.2f} s ({stage.nbytes / 1e9:.2f} GB state)")
