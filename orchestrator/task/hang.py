"""Evidence of a hang: Python stacks in every rank's log, NCCL's flight recorder in the job folder.

When a collective times out, the rank that gave up prints its traceback, but the rank that stopped
progressing is the one worth seeing. orch stops it with SIGTERM (``orch run``; srun does the same
under Slurm when the step ends), so every task registers :mod:`faulthandler` for SIGTERM: the stacks
of all its threads go to its log, then the signal takes its normal course. NCCL runs also enable
torch's flight recorder (a ring buffer of the last collectives, dumped on a timeout) into
``logs/nccl_trace_rank_<R>`` of the job folder, so each rank's last collective can be read there.
No torch here: the launcher installs this before it imports the runtime.
"""

from __future__ import annotations

import faulthandler
import io
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from orchestrator.spec.runconfig import LOG_DIR

TRACE_PREFIX = "nccl_trace_rank_"  # torch appends the rank
TRACE_ENTRIES = "2000"


def flight_recorder_env(job_dir: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """The NCCL flight recorder variables this task should set (pure; the user's own values win)."""
    wanted = {
        "TORCH_NCCL_TRACE_BUFFER_SIZE": TRACE_ENTRIES,
        "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": str(job_dir / LOG_DIR / TRACE_PREFIX),
    }
    return {key: value for key, value in wanted.items() if key not in environ}


def stack_dump_signals(preempt_signal: str) -> tuple[signal.Signals, ...]:
    """SIGTERM (how a stuck rank is stopped), unless it is the preemption signal, which must stay quiet."""
    return () if preempt_signal == "TERM" else (signal.SIGTERM,)


def install_stack_dumps(preempt_signal: str, stream: TextIO | None = None) -> None:
    """On SIGTERM: every thread's Python stack to ``stream`` (the rank's log), then the usual exit."""
    out = _with_fd(stream or sys.stderr)
    if out is None:  # no file descriptor to write to (stderr replaced in-process): nothing to register
        return
    for signum in stack_dump_signals(preempt_signal):
        faulthandler.register(signum, file=out, all_threads=True, chain=True)


def dump_stacks(stream: TextIO | None = None) -> None:
    """Every thread's stack now (a collective timed out on this rank)."""
    out = _with_fd(stream or sys.stderr)
    if out is not None:
        out.flush()
        faulthandler.dump_traceback(file=out, all_threads=True)


def _with_fd(stream: TextIO | None) -> TextIO | None:
    """``stream`` when it has a file descriptor (faulthandler writes to one), else the real stderr."""
    for candidate in (stream, sys.__stderr__):
        try:
            if candidate is not None:
                candidate.fileno()
                return candidate
        except (OSError, ValueError, io.UnsupportedOperation):
            continue
    return None
