"""Checkpoints off the training thread: a host copy of the state on it, the file write in the background.

``HostStage.copy`` is all a save costs the training thread (besides the gather of the ranks' RNG states
and the barrier that ``Checkpointer.save`` does as before): every tensor of the state (model, optimizer
state, the ranks' RNG states) is copied into a host buffer, detached, and the containers around them
are rebuilt, so the next optimizer step cannot change what is written. The buffers are kept from save
to save: one host copy of the state at most, pinned memory for CUDA tensors (the device-to-host copies
are queued on the current stream and the writer waits on their event, so they overlap training too). CPU
tensors are copied by one thread (a memory-bound copy; a parallel one waits for its slowest thread when the
cores are shared).

``BackgroundWriter`` runs the write (``checkpoint.write_atomic``: the same temporary file, fsync order,
sidecar and rotation, so ``latest.pt`` is a complete checkpoint at every instant, SIGKILL included) in
one thread, at a lower priority than training (nice +10: the training threads win a contended core). At
most one write is in flight: :meth:`BackgroundWriter.wait` joins it, and every new save, the end of
training, a preemption checkpoint and a resume call it first. An error of the write (a full disk:
``spec.numbers.full_disk``'s orch error) is kept and raised by that next ``wait`` on the training thread, as
the synchronous save would have raised it; :meth:`BackgroundWriter.close` (the exception path) says it on
stderr instead of replacing the error the run is already failing with.
"""

from __future__ import annotations

import contextlib
import copy
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from orchestrator.errors import OrchError

NICE = 10  # how much lower the writer thread's priority is than the training thread's


class HostStage:
    """The host buffers of the last save, reused while the state's tensors keep their shapes and dtypes."""

    def __init__(self) -> None:
        self.buffers: list[torch.Tensor] = []
        self._used = 0
        self._seen: dict[tuple[Any, ...], torch.Tensor] = {}
        self._cuda = False

    def copy(self, state: Mapping[str, Any]) -> tuple[dict[str, Any], torch.cuda.Event | None]:
        """A copy of ``state`` that shares no tensor with it (tied tensors stay tied), and the CUDA event
        after which the copies of device tensors are complete (None: they are complete now)."""
        self._used, self._seen, self._cuda = 0, {}, False
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # a memory-bound copy: one core gets most of the bandwidth, and a parallel copy
        try:  # waits for its slowest thread when the cores are shared (2x slower on a loaded 2-core machine)
            copied = self._copy(dict(state))
        finally:
            torch.set_num_threads(threads)
        del self.buffers[self._used:]  # a smaller state than the last one: free the rest
        self._seen = {}
        event = None
        if self._cuda:
            event = torch.cuda.Event()  # type: ignore[no-untyped-call]
            event.record()
        return copied, event

    @property
    def nbytes(self) -> int:
        return sum(b.numel() * b.element_size() for b in self.buffers)

    def _copy(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return self._tensor(value)
        if isinstance(value, dict):
            out = {k: self._copy(v) for k, v in value.items()}
            if type(value) is dict:
                return out
            rebuilt = type(value)(out)  # an OrderedDict of state_dict(), with its _metadata (versions)
            rebuilt.__dict__.update(copy.deepcopy(vars(value)))
            return rebuilt
        if isinstance(value, list):
            return [self._copy(v) for v in value]
        if isinstance(value, tuple):
            items = [self._copy(v) for v in value]
            return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
        return value  # numbers, strings, None: immutable

    def _tensor(self, tensor: torch.Tensor) -> torch.Tensor:
        tensor = tensor.detach()
        if tensor.layout != torch.strided or tensor.is_quantized:
            return tensor.to("cpu", copy=True)  # rare layouts: a plain copy, no buffer kept
        key = (tensor.device, tensor.dtype, tuple(tensor.shape), tensor.stride(), tensor.data_ptr())
        if tensor.numel() and key in self._seen:
            return self._seen[key]
        cuda = tensor.device.type == "cuda"
        index, self._used = self._used, self._used + 1
        if index < len(self.buffers) and self._fits(self.buffers[index], tensor, cuda):
            buffer = self.buffers[index]
        else:
            buffer = torch.empty(tuple(tensor.shape), dtype=tensor.dtype, device="cpu",
                                 pin_memory=cuda and torch.cuda.is_available())
            if index < len(self.buffers):
                self.buffers[index] = buffer
            else:
                self.buffers.append(buffer)
        buffer.copy_(tensor, non_blocking=cuda)
        self._cuda = self._cuda or cuda
        self._seen[key] = buffer
        return buffer

    @staticmethod
    def _fits(buffer: torch.Tensor, tensor: torch.Tensor, cuda: bool) -> bool:
        return buffer.shape == tensor.shape and buffer.dtype == tensor.dtype and buffer.is_pinned() == (
            cuda and torch.cuda.is_available())


def lower_priority() -> None:
    """The calling thread (Linux: its own nice value) yields the CPU to the training threads when they compete;
    an idle core still runs it at full speed."""
    with contextlib.suppress(AttributeError, OSError):  # no setpriority, or a thread id it does not take
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + NICE))


class BackgroundWriter:
    """One write at a time in a thread of its own; its error reaches the training thread at the next wait."""

    def __init__(self, write: Callable[[Mapping[str, Any]], Path]) -> None:
        self._write = write
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.write_s = 0.0  # seconds the finished writes took (in the background)
        self.written: Path | None = None

    @property
    def in_flight(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, state: Mapping[str, Any], ready: torch.cuda.Event | None = None) -> None:
        """Write ``state`` in the background (the previous write must have been waited for)."""
        if self._thread is not None:
            raise RuntimeError("a checkpoint write is still in flight: wait() first")
        self._thread = threading.Thread(target=self._run, args=(state, ready), name="orch-checkpoint", daemon=False)
        self._thread.start()

    def _run(self, state: Mapping[str, Any], ready: torch.cuda.Event | None) -> None:
        began = time.perf_counter()
        lower_priority()
        try:
            if ready is not None:
                ready.synchronize()
            self.written = self._write(state)
        except BaseException as exc:  # kept for the training thread: never lost
            self._error = exc
        finally:
            self.write_s += time.perf_counter() - began

    def wait(self) -> None:
        """Join the write in flight; raise its error, if it failed (once)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        error, self._error = self._error, None
        if error is not None:
            raise error

    def close(self) -> None:
        """Join the write in flight without raising (the exception path): a failed write is said on stderr."""
        try:
            self.wait()
        except OrchError as exc:
            print(f"orch: error: the checkpoint written in the background failed: {exc.message}"
                  + (f"\nHINT: {exc.hint}" if exc.hint else ""), file=sys.stderr, flush=True)
        except BaseException as exc:
            print(f"orch: error: the checkpoint written in the background failed: {type(exc).__name__}: {exc}",
                  file=sys.stderr, flush=True)
