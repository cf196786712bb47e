"""Progress inside an epoch, from rank 0: a plain log line every N seconds and ``progress.json``.

The line: ``epoch 2/10  step 120/469 (26%)  loss 0.3412  12,345 samples/s  ETA 0:35`` (samples/s
over all ranks). ``progress.json`` in the job folder (epoch, step, steps, loss, samples/s, ETA,
time) is rewritten atomically at most every ``JSON_EVERY`` seconds; ``orch status`` shows it. It is
not fsynced: it is written inside the training loop while the other ranks wait in the step's
collectives, a display needs no durability, and a rename shows readers the old or the new file.
No torch here: the caller passes a function that reads the running loss only when it is needed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from orchestrator.runtime.metrics import write_json_atomic
from orchestrator.spec.runconfig import PROGRESS_FILE

__all__ = ["PROGRESS_FILE", "Progress", "eta_text", "progress_line"]
JSON_EVERY = 5.0  # seconds between progress.json updates


def eta_text(seconds: float) -> str:
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def progress_line(epoch: int, epochs: int, step: int, steps: int, loss: float | None, rate: float,
                  eta: float) -> str:
    width = len(str(steps))
    loss_text = f"{loss:.4f}" if loss is not None else "-"
    return (f"epoch {epoch}/{epochs}  step {step:>{width}}/{steps} ({100 * step // max(steps, 1)}%)  "
            f"loss {loss_text}  {rate:,.0f} samples/s  ETA {eta_text(eta)}")


@dataclass
class Progress:
    """Called after every step on rank 0; does something only when its clocks say so."""

    path: Path
    epochs: int
    every: float  # seconds between log lines (0: none)
    world_size: int
    clock: Callable[[], float] = time.monotonic
    _epoch: int = 0
    _steps: int = 0
    _start_step: int = 0
    _started: float = 0.0
    _next_line: float = 0.0
    _next_json: float = 0.0

    def start_epoch(self, epoch: int, steps: int, start_step: int) -> None:
        now = self.clock()
        self._epoch, self._steps, self._start_step, self._started = epoch, steps, start_step, now
        self._next_line = now + self.every if self.every > 0 else float("inf")
        self._next_json = now  # the first step of an epoch shows up at once

    def step(self, step: int, samples: int, loss: Callable[[], float | None]) -> str | None:
        """After ``step`` steps of this epoch (``samples`` of this rank so far); the line, if one is due."""
        now = self.clock()
        if now < self._next_json and now < self._next_line:
            return None
        elapsed = max(now - self._started, 1e-9)
        done = step - self._start_step
        rate = samples * self.world_size / elapsed
        eta = elapsed / max(done, 1) * (self._steps - step)
        value = loss()
        line = None
        if now >= self._next_line:
            self._next_line = now + self.every
            line = progress_line(self._epoch + 1, self.epochs, step, self._steps, value, rate, eta)
        if now >= self._next_json:
            self._next_json = now + JSON_EVERY
            self._write(step, value, rate, eta)
        return line

    def end_epoch(self, loss: float | None, rate: float) -> None:
        """The epoch's last word: all its steps done (what ``orch status`` shows between epochs)."""
        self._write(self._steps, loss, rate, 0.0)

    def _write(self, step: int, loss: float | None, rate: float, eta: float) -> None:
        write_json_atomic(self.path, {"epoch": self._epoch + 1, "epochs": self.epochs, "step": step,
                                      "steps": self._steps, "loss": loss, "samples_per_s": rate, "eta_s": eta,
                                      "time": time.time()}, fsync=False)
