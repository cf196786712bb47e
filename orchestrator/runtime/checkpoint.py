"""Checkpoints: atomic save by rank 0, resume on every rank, loud fallback to the previous one.

Layout in ``<job_dir>/checkpoints/``: ``latest.pt`` (the newest complete checkpoint) and
``previous.pt`` (the one before). A save writes a temporary file, fsyncs it, hard-links the
current ``latest.pt`` to ``previous.pt`` and renames the new file over ``latest.pt``, then fsyncs
the directory: at every instant ``latest.pt`` is a complete old or new checkpoint. A reader
that finds ``latest.pt`` unreadable says so and uses ``previous.pt``; with neither readable it
stops with an error naming the files (never a silent restart from scratch).

Beside each file lies its sidecar (``latest.pt.json``, ``previous.pt.json``; ``resumecheck``):
the job identity and counters of the checkpoint, which ``orch run --resume`` and the batch script
check before any rank starts. It is written to a temporary file first too, rotated with its
checkpoint, and renamed right after it.

With ``Checkpointer(background=True)`` (``launcher.checkpoint_write: async``) the same ``write_atomic`` runs in
a thread of rank 0 (``runtime.asyncsave``) on a host copy of the state; a save, a resume and the end wait for it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import random
import shutil
import sys
import time
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from orchestrator.errors import OrchError
from orchestrator.records.resumecheck import LATEST as LATEST  # the names live where the CLI reads them (no torch)
from orchestrator.records.resumecheck import PREVIOUS as PREVIOUS
from orchestrator.records.resumecheck import JobIdentity, make_sidecar, sidecar_path, zip_members_digest
from orchestrator.records.trust import TrustError, check_checkpoint
from orchestrator.runtime.asyncsave import BackgroundWriter, HostStage
from orchestrator.runtime.dist import Dist, barrier, broadcast_object, gather_objects
from orchestrator.spec.numbers import writing

log = logging.getLogger(__name__)

FORMAT = 1
TMP_PREFIX = ".tmp-"
REQUIRED_KEYS = ("format", "model", "optimizer", "epoch", "step", "world_size", "batch_size", "ranks")


class CheckpointError(OrchError):
    """A checkpoint file cannot be used."""


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _rotate(current: Path, target: Path) -> None:
    """Make ``target`` the file ``current`` is now (a hard link; a copy where links fail)."""
    tmp = current.with_name(f"{TMP_PREFIX}{target.name}.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        os.link(current, tmp)  # current stays in place while target is updated
    except OSError:
        shutil.copy2(current, tmp)  # file systems without hard links
    os.replace(tmp, target)


def _write_sidecar(state: Mapping[str, Any], checkpoint: Path, job: JobIdentity) -> Path | None:
    """The sidecar of the (temporary) checkpoint file ``checkpoint``, in a temporary file of its own
    (None when the state has no valid one: the checkpoint is still written, the ranks check it)."""
    model = state.get("model") or {}
    shapes = [(str(k), tuple(v.shape)) for k, v in model.items() if isinstance(v, torch.Tensor)]
    params = state.get("params") or {}
    try:
        text = make_sidecar(job, epoch=int(state["epoch"]), step=int(state["step"]),
                            world_size=int(state["world_size"]), batch_size=int(state["batch_size"]),
                            grad_accum=int(state.get("grad_accum", 1)), ranks=len(state.get("ranks") or []),
                            params=params, shapes=shapes, size=checkpoint.stat().st_size,
                            members=zip_members_digest(checkpoint) or "0" * 64)
    except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        log.warning("no sidecar for checkpoint %s: %s", checkpoint, str(exc).splitlines()[0][:200])
        return None
    tmp = sidecar_path(checkpoint)
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    return tmp


def write_atomic(state: Mapping[str, Any], directory: Path, job: JobIdentity | None = None) -> Path:
    """Write ``state`` as the new ``latest.pt``, keeping the old one as ``previous.pt``; with ``job``,
    each file's sidecar too (without: any sidecar of the replaced file goes, never a stale one). A full disk
    or quota is one orch error naming the file (:func:`orchestrator.spec.numbers.full_disk`): the partial
    temporary files are removed (their space freed) and ``latest.pt`` stays the newest complete checkpoint."""
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f"{TMP_PREFIX}{LATEST}.{os.getpid()}"
    try:
        with writing(directory / LATEST):
            return _write_atomic(state, directory, tmp, job)
    except BaseException:
        for left in (tmp, sidecar_path(tmp)):
            with contextlib.suppress(OSError):
                left.unlink(missing_ok=True)
        raise


def _write_atomic(state: Mapping[str, Any], directory: Path, tmp: Path, job: JobIdentity | None) -> Path:
    with tmp.open("wb") as fh:
        torch.save(dict(state), fh)
        fh.flush()
        os.fsync(fh.fileno())
    tmp_sidecar = _write_sidecar(state, tmp, job) if job is not None else None
    latest, previous = directory / LATEST, directory / PREVIOUS
    if latest.exists():
        _rotate(latest, previous)
        if sidecar_path(latest).exists():
            _rotate(sidecar_path(latest), sidecar_path(previous))
        else:
            sidecar_path(previous).unlink(missing_ok=True)
    os.replace(tmp, latest)
    if tmp_sidecar is not None:
        os.replace(tmp_sidecar, sidecar_path(latest))  # right after: resumecheck knows this window
    else:
        sidecar_path(latest).unlink(missing_ok=True)
    fsync_dir(directory)
    return latest


def verify_crc(path: Path) -> None:
    """Check the CRC-32 that torch.save records for every member of its zip file: torch.load does
    not, so a flipped bit in the weights would load silently as different weights."""
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except Exception as exc:  # BadZipFile, OSError, ... for truncated or overwritten files
        raise CheckpointError(f"checkpoint {path} cannot be loaded: {exc or type(exc).__name__}",
                              hint="the file is truncated or corrupt") from None
    if bad is not None:
        raise CheckpointError(f"checkpoint {path} is corrupt: {bad} fails its CRC-32 check",
                              hint="the file was damaged after it was written (disk, copy or network)")


def read_checkpoint(path: Path, map_location: torch.device | str = "cpu") -> dict[str, Any]:
    """Load and check one checkpoint file; any problem is a CheckpointError naming the file."""
    verify_crc(path)
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # torch raises RuntimeError, EOFError, UnpicklingError, ... for damage
        if isinstance(exc, pickle.UnpicklingError) and "weights only" in str(exc).lower():
            raise CheckpointError(f"checkpoint {path} holds Python objects that only a full unpickle would load, "
                                  "which could run code from the file; orch loads with weights_only=True",
                                  hint="orch only resumes from its own checkpoints; move the file away") from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CheckpointError(f"checkpoint {path} cannot be loaded: {first}",
                              hint="the file is truncated or corrupt") from None
    missing = [k for k in REQUIRED_KEYS if k not in state] if isinstance(state, dict) else ["a mapping"]
    if missing or not isinstance(state, dict):
        raise CheckpointError(f"checkpoint {path} is not an orch checkpoint (missing {', '.join(missing)})",
                              hint="move the file away; orch only resumes from its own checkpoints")
    if state["format"] != FORMAT:
        raise CheckpointError(f"checkpoint {path} has format {state['format']}, expected {FORMAT}",
                              hint="it was written by another orch version")
    return state


def capture_rng(device: torch.device) -> dict[str, Any]:
    np_state: tuple[Any, ...] = tuple(np.random.get_state(legacy=True))
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
        "python": random.getstate(),
        "numpy": (str(np_state[0]), torch.from_numpy(np.asarray(np_state[1], dtype=np.int64)),
                  int(np_state[2]), int(np_state[3]), float(np_state[4])),
    }


def restore_rng(state: Mapping[str, Any], device: torch.device) -> None:
    torch.set_rng_state(state["torch"].cpu())
    if device.type == "cuda" and state.get("cuda") is not None:
        torch.cuda.set_rng_state(state["cuda"].cpu(), device)
    random.setstate(state["python"])
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, keys.cpu().numpy().astype(np.uint32), pos, has_gauss, cached))


@dataclass
class Checkpointer:
    """Saves and resumes through one guarded path; every rank calls both methods. With ``background``,
    rank 0 writes in a thread of its own (``runtime.asyncsave``): the training thread only copies the
    state to host memory; without, it writes the file itself."""

    directory: Path
    ctx: Dist
    job: JobIdentity | None = None  # writes the sidecar that resumecheck checks before ranks start
    background: bool = False
    stage: HostStage = field(default_factory=HostStage)
    writer: BackgroundWriter = field(init=False)

    def __post_init__(self) -> None:
        self.writer = BackgroundWriter(self._write)

    @property
    def write_s(self) -> float:
        """Seconds rank 0 spent writing the files of the finished saves (in the background or not)."""
        return self.writer.write_s

    def _write(self, state: Mapping[str, Any]) -> Path:
        started = time.perf_counter()
        path = write_atomic(state, self.directory, self.job)
        log.info("checkpoint written to %s in %.2f s", path, time.perf_counter() - started)
        return path

    def save(self, state: Mapping[str, Any], local: Mapping[str, Any]) -> None:
        """Collective: gather every rank's RNG state and ``local`` values into ``state["ranks"]``,
        rank 0 writes (or copies to host memory and starts the background write, once the previous
        one is done), then all ranks pass a barrier (nobody runs ahead of rank 0)."""
        ranks = gather_objects({**local, "rng": capture_rng(self.ctx.device)}, self.ctx)
        if self.ctx.is_main:
            self.wait()  # at most one save in flight; a failed one raises here
            full = {**state, "format": FORMAT, "ranks": ranks}
            if self.background:
                self.writer.start(*self.stage.copy(full))
            else:
                started = time.perf_counter()
                try:
                    self._write(full)
                finally:
                    self.writer.write_s += time.perf_counter() - started
        barrier(self.ctx)

    def wait(self) -> None:
        """Rank 0: join the background write in flight (raising its error); a no-op elsewhere."""
        self.writer.wait()

    def finish(self) -> float:
        """Collective: the last save is on disk (its error raised on rank 0) before any rank goes on;
        the seconds this took (the training thread's stall)."""
        began = time.monotonic()
        with self.ctx.patient():  # the other ranks wait at the barrier while rank 0's write ends
            self.wait()
            barrier(self.ctx)
        return time.monotonic() - began

    def close(self) -> None:
        """The exception path: join the write in flight, saying (not raising) its error."""
        self.writer.close()

    def resume(self) -> dict[str, Any] | None:
        """Collective: rank 0 picks a readable checkpoint (or none) and every rank loads it."""
        choice: tuple[str | None, str | None] = (None, None)
        if self.ctx.is_main:
            self.wait()  # a write still in flight lands first (and clean_temporary never races it)
            self.clean_temporary()
            choice = self._choose()
        path_text, error = broadcast_object(choice, self.ctx)
        if error is not None:
            raise CheckpointError(error, hint="restore a good checkpoint into checkpoints/, or move "
                                              "the damaged files away to start from scratch on purpose")
        if path_text is None:
            return None
        return read_checkpoint(Path(path_text), self.ctx.device)

    def _choose(self) -> tuple[str | None, str | None]:
        latest, previous = self.directory / LATEST, self.directory / PREVIOUS
        if not latest.exists() and not previous.exists():
            return None, None
        for path in (latest, previous):  # the trust rules, right before any rank unpickles a file
            try:
                check_checkpoint(path)
            except TrustError as exc:
                return None, f"{exc.message} (fix: {exc.hint})" if exc.hint else exc.message
        try:
            if latest.exists():
                read_checkpoint(latest)
                return str(latest), None
            latest_problem = f"{latest} is missing"
        except CheckpointError as exc:
            latest_problem = exc.message
        try:
            if not previous.exists():
                return None, f"{latest_problem}, and there is no {PREVIOUS} to fall back to"
            state = read_checkpoint(previous)
        except CheckpointError as exc:
            return None, f"{latest_problem}; the fallback failed too: {exc.message}"
        if latest.exists():
            kept = latest.with_name(f"{LATEST}.corrupt-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}")
            os.replace(latest, kept)
            latest_problem += f" (moved to {kept.name})"
        message = (f"orch: warning: {latest_problem}; resuming from {previous} "
                   f"(epoch {state['epoch'] + 1}, step {state['step']}) instead")
        print(message, file=sys.stderr, flush=True)
        return str(previous), None

    def clean_temporary(self) -> None:
        """Remove temporary files that a writer killed mid-save left behind."""
        if self.directory.is_dir():
            for stale in self.directory.glob(f"{TMP_PREFIX}*"):
                stale.unlink(missing_ok=True)
