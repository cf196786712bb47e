"""Where a task's start-up time went: queued, to the task, imports, process group, build, first step.

One clock per task process (:data:`CLOCK`, process-wide like a logger: the launcher starts it, the
entrypoint laps it, ``result.json`` carries it as ``startup``: ``{phase: seconds}``). Phases, in order
(:data:`PHASES`, the one table ``orch status`` prints them by):

``queued``         submit (the job folder's ``job.json``, written by ``orch submit``) to the start of the
                   batch script (``ORCH_BATCH_START``, exported by orch's script); first runs only.
``batch``          the batch script's start to its ``srun`` (``ORCH_SRUN_START``): the script's set-up
                   lines, ``launcher.setup`` and the MASTER_PORT computation.
``to_task``        ``srun`` to this task's process start (Slurm starting the step and the task).
                   These three are absent under ``orch run`` and with templates that do not export
                   the two variables.
``imports``        the process start to the runtime and the job file being imported; ``import_torch``
                   is the part of it that ``import torch`` took (orch's own imports are the rest).
``process_group``  ``init_process_group``: rendezvous at the store and the communicator's set-up.
``import_dynamo``  what is left of the ``torch._dynamo`` import (``runtime.imports.prefetch_dynamo``)
                   after the rendezvous; near 0 when the rendezvous took longer than the import.
``build``          the job's ``build()`` (model, data) and reading the checkpoint to resume from.
``ddp``            ``runtime.setup.set_up``: the model on its device (and its resumed weights), the data
                   sources, DistributedDataParallel's constructor (the parameter broadcast), the optimizer
                   and DDP's bucket settling pass.
``first_step``     from there to the end of the first training step (forward, backward, all-reduce).

The imports themselves are timed by :mod:`orchestrator.runtime.imports` (``import torch``, and the
``torch._dynamo`` prefetch during the rendezvous): this module never imports torch.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path

from orchestrator.env.distenv import restart_count
from orchestrator.errors import DistEnvError

log = logging.getLogger(__name__)

PHASES: tuple[str, ...] = ("queued", "batch", "to_task", "imports", "import_torch", "process_group", "import_dynamo",
                           "build", "ddp", "first_step")
BATCH_START_VAR = "ORCH_BATCH_START"  # epoch seconds (bash's $EPOCHREALTIME), set by the batch script
SRUN_START_VAR = "ORCH_SRUN_START"  # the same, just before srun
CLOCK_SLACK = 0.1  # seconds: /proc's times are in ticks (10 ms); a phase this much below 0 counts as 0


def process_start_time(pid: int | str = "self") -> float | None:
    """Epoch seconds at which the process started (Linux /proc, to about 10 ms), else None.

    The kernel counts the start in clock ticks after boot; the age of the process (the uptime now
    minus that) is subtracted from the time now. (``btime`` in /proc/stat has whole seconds only.)
    """
    try:
        now = time.time()
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
        uptime = float(Path("/proc/uptime").read_text(encoding="ascii").split()[0])
        ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22: starttime, clock ticks after boot
        return now - max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


class StartupClock:
    """Phase durations of one task, measured with ``time.time()`` (comparable across hosts' clocks
    only as far as they are synchronized; the phases within a task use one clock)."""

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}
        self._last: float | None = None

    def start(self, environ: Mapping[str, str], job_dir: Path | None = None, *, now: float | None = None) -> None:
        """Record ``queued``, ``batch`` and ``to_task`` from the batch script's and the kernel's times;
        the next lap counts from the process start."""
        now = time.time() if now is None else now
        process = process_start_time()
        batch = _float(environ.get(BATCH_START_VAR))
        srun = _float(environ.get(SRUN_START_VAR))
        first_run = _restarts(environ) == 0  # a requeued job: its job.json is older than the requeue
        submitted = _mtime(job_dir / "job.json") if job_dir is not None and first_run else None
        for phase, begin, end in (("queued", submitted, batch), ("batch", batch, srun), ("to_task", srun, process)):
            if begin is not None and end is not None and end >= begin - CLOCK_SLACK:
                self.phases[phase] = max(0.0, end - begin)
        self._last = process if process is not None else now

    def restart(self, *, now: float | None = None) -> None:
        """A new attempt in this process (an in-process restart): its phases count from now."""
        self.phases.clear()
        self._last = time.time() if now is None else now

    def lap(self, phase: str, *, now: float | None = None) -> float:
        """The time since the previous lap (or the start), added to ``phase``."""
        now = time.time() if now is None else now
        if self._last is None:
            self._last = now
        spent = max(0.0, now - self._last)
        self.phases[phase] = self.phases.get(phase, 0.0) + spent
        self._last = now
        return spent

    def record(self, phase: str, seconds: float) -> None:
        """A phase measured elsewhere (e.g. ``import_torch``, a part of ``imports``)."""
        self.phases[phase] = seconds

    def as_dict(self) -> dict[str, float]:
        """``{phase: seconds}`` in :data:`PHASES` order, rounded to milliseconds."""
        order = {name: i for i, name in enumerate(PHASES)}
        return {k: round(v, 3) for k, v in sorted(self.phases.items(), key=lambda kv: order.get(kv[0], 99))}


CLOCK = StartupClock()  # this process's clock (one task per process)


def _restarts(environ: Mapping[str, str]) -> int | None:
    """SLURM_RESTART_COUNT as :func:`orchestrator.env.distenv.restart_count` reads it; None when unreadable
    (a clock never fails a task: the launcher reports such a value itself)."""
    try:
        return restart_count(environ)
    except DistEnvError:
        return None


def _float(text: str | None) -> float | None:
    try:  # $EPOCHREALTIME uses the locale's decimal separator
        return float(text.replace(",", ".")) if text else None
    except ValueError:
        return None


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def format_startup(phases: Mapping[str, float]) -> str:
    """The ``orch status JOB`` lines: one phase a line in :data:`PHASES` order, with its share."""
    total = sum(v for k, v in phases.items() if k != "import_torch")  # import_torch is part of imports
    order = {name: i for i, name in enumerate(PHASES)}
    lines = ["startup (rank 0):"]
    for name, seconds in sorted(phases.items(), key=lambda kv: order.get(kv[0], 99)):
        label = "  of which import torch" if name == "import_torch" else f"  {name}"
        share = f"{100 * seconds / total:5.1f}%" if total > 0 and name != "import_torch" else ""
        lines.append(f"{label:<24}{seconds:9.3f}s  {share}".rstrip())
    lines.append(f"{'  total':<24}{total:9.3f}s")
    return "\n".join(lines)
