"""Evidence of a hang: Python stacks in every rank's log, NCCL's flight recorder in the job folder.

When a collective times out, the rank that gave up prints its traceback, but the rank that stopped
progressing is the one worth seeing. orch stops it with SIGTERM (``orch run``; srun does the same
under Slurm when the step ends), so every task registers :mod:`faulthandler` for SIGTERM: the stacks
of all its threads go to its log, then the signal takes its normal course. NCCL runs also enable
torch's flight recorder (a ring buffer of the last collectives, dumped on a timeout) into
``logs/nccl_trace_rank_<R>`` of the job folder, where :mod:`orchestrator.records.flightrec` reads each rank's
last collectives.
The terminal is for the user: the rank that gave up also dumps its own threads' stacks, into its log
between two marker lines that ``orch run`` does not echo, and the stacks ``orch run`` shows from a stuck
rank's log leave out orch's launcher frames (:func:`for_terminal`); the logs keep everything.
No torch here: the launcher installs this before it imports the runtime.
"""

from __future__ import annotations

import faulthandler
import io
import os
import re
import signal
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TextIO

from orchestrator.records.flightrec import TRACE_PREFIX  # torch appends the rank; flightrec reads the dumps
from orchestrator.spec.runconfig import LOG_DIR
from orchestrator.task.lines import ends_with_newline

# dump_stacks' block in a rank's output: kept in its log, not shown by orch run (local/runner.py)
STACKS_BEGIN = "orch: stacks of this rank's threads after its collective failed (log only):"
STACKS_END = "orch: end of the stacks"
_BEGIN, _END = STACKS_BEGIN.encode(), STACKS_END.encode()
_FRAME_RE = re.compile(r'^\s*File "([^"]*)", line \d+ in ')
_ORCH_DIRS = tuple(str(p) + os.sep for p in {Path(__file__).parents[1], Path(__file__).resolve().parents[1]})
TRACE_ENTRIES = "2000"

# The flight recorder's settings under the name the installed torch reads. torch 2.8 made the flight
# recorder vendor neutral (pytorch/pytorch#152563, merged 2025-05-07, after the 2.7 branch cut) and reads
# TORCH_FR_* first, the old TORCH_NCCL_* names only as deprecated aliases: setting an old name prints
# "Environment variable TORCH_NCCL_TRACE_BUFFER_SIZE is deprecated; use TORCH_FR_BUFFER_SIZE instead" in
# every rank. Earlier torch reads only the old names (a new name there would turn the recorder off).
# Certainty: TORCH_FR_BUFFER_SIZE from 2.8 is high (the PR's diff and date; NVIDIA/nvidia-resiliency-ext
# switches at 2.8 too); TORCH_FR_DUMP_TEMP_FILE is read beside it in the same FlightRecorder code (both
# names are in torch 2.13's libtorch_cpu.so), its landing release inferred from the same change.
# TORCH_NCCL_DUMP_ON_TIMEOUT keeps its name. (setting, old name, new name, first torch that reads the new)
FLIGHT_RECORDER_NAMES: tuple[tuple[str, str, str, tuple[int, int]], ...] = (
    ("buffer", "TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE", (2, 8)),
    ("dump_file", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_FR_DUMP_TEMP_FILE", (2, 8)),
)


def torch_release(version: str | None) -> tuple[int, int] | None:
    """``"2.8.0+cu128"`` -> ``(2, 8)`` (nightlies and release candidates count as their release);
    None when unknown or unreadable (pure)."""
    match = re.match(r"\s*(\d+)\.(\d+)", version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def installed_torch_version() -> str | None:
    """The installed torch's version from its package metadata, without importing torch."""
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def flight_recorder_names(torch_version: str | None) -> dict[str, str]:
    """Setting -> the variable name this torch reads (an unknown version: today's names) (pure)."""
    release = torch_release(torch_version)
    return {setting: new if release is None or release >= since else old
            for setting, old, new, since in FLIGHT_RECORDER_NAMES}


def flight_recorder_env(job_dir: Path, environ: Mapping[str, str], torch_version: str | None) -> dict[str, str]:
    """The NCCL flight recorder variables this task should set, under the names ``torch_version``
    reads (pure; a value the user set, under either name, wins)."""
    names = flight_recorder_names(torch_version)
    given = {setting for setting, old, new, _ in FLIGHT_RECORDER_NAMES if old in environ or new in environ}
    wanted = {
        "buffer": (names["buffer"], TRACE_ENTRIES),
        "dump_on_timeout": ("TORCH_NCCL_DUMP_ON_TIMEOUT", "1"),
        "dump_file": (names["dump_file"], str(job_dir / LOG_DIR / TRACE_PREFIX)),
    }
    return {name: value for setting, (name, value) in wanted.items()
            if setting not in given and name not in environ}


def stack_dump_signals(preempt_signal: str) -> tuple[signal.Signals, ...]:
    """SIGTERM (how a stuck rank is stopped), unless it is the preemption signal, which must stay quiet."""
    return () if preempt_signal == "TERM" else (signal.SIGTERM,)


_DUMPING: dict[int, TextIO] = {}  # signal -> where its stacks go, while registered
STOPPED_NOTE = ("orch: {rank}stopped by {signal} (orch cancel or scancel, the time limit, or orch ending the other "
                "ranks of a failed run): the stacks above show where each thread was when it came; this is not a crash")


def install_stack_dumps(preempt_signal: str, stream: TextIO | None = None) -> None:
    """On SIGTERM: every thread's Python stack to ``stream`` (the rank's log), then the usual exit."""
    out = _with_fd(stream or sys.stderr)
    if out is None:  # no file descriptor to write to (stderr replaced in-process): nothing to register
        return
    for signum in stack_dump_signals(preempt_signal):
        faulthandler.register(signum, file=out, all_threads=True, chain=True)
        _DUMPING[signum] = out


def remove_stack_dumps() -> None:
    """The task is leaving (its outcome recorded): a SIGTERM now (orch run stopping the other ranks
    of a failed run) finds nothing stuck, so it dumps no stacks into the log after the real error."""
    for signum in stack_dump_signals(""):
        faulthandler.unregister(signum)
        _DUMPING.pop(signum, None)


def register_again(signums: Iterable[int]) -> None:
    """``signal.signal`` (a handler set from Python) replaced faulthandler's C-level handler of these signals:
    put it back where stacks were being dumped, chaining to the Python handler set now."""
    for signum in signums:
        out = _DUMPING.get(signum)
        if out is not None:  # (a second register of an enabled signal changes its settings only: not its handler)
            faulthandler.unregister(signum)
            faulthandler.register(signum, file=out, all_threads=True, chain=True)


def say_stopped(signum: int, rank: int | None = None) -> None:
    """After the stacks a SIGTERM dumped (its Python handler runs once the C-level dump is written): one
    line that says why they are there, so a cancelled rank's log does not read as a crash. Nothing when no
    stacks were dumped for ``signum``."""
    out = _DUMPING.get(signum)
    if out is None:
        return
    who = f"rank {rank} " if rank is not None else ""
    try:
        out.flush()
        fresh = "" if ends_with_newline(out.fileno()) is not False else "\n"  # faulthandler's lines end in one
        out.write(fresh + STOPPED_NOTE.format(rank=who, signal=signal.Signals(signum).name) + "\n")
        out.flush()
    except (OSError, ValueError):  # a closed log: the record still says how the task ended
        pass


def dump_stacks(stream: TextIO | None = None) -> None:
    """Every thread's stack now (a collective timed out on this rank), between :data:`STACKS_BEGIN` and
    :data:`STACKS_END`: the rank's log keeps them, ``orch run`` does not show them (the rank's own
    traceback, just printed, says where its collective was; the rest are orch's launcher frames)."""
    out = _with_fd(stream or sys.stderr)
    if out is not None:
        out.write(STACKS_BEGIN + "\n")
        out.flush()
        faulthandler.dump_traceback(file=out, all_threads=True)
        out.write(STACKS_END + "\n")
        out.flush()


class LogOnly:
    """Which of a rank's output lines the terminal shows, one line at a time: none of a :func:`dump_stacks` block."""

    def __init__(self) -> None:
        self.within = False

    def shown(self, line: bytes) -> bool:
        if line.startswith(_BEGIN):
            self.within = True
        elif self.within:
            self.within = not line.startswith(_END)
            return False
        return not self.within


def for_terminal(text: str) -> str:
    """A rank's log lines as the terminal shows them: no :func:`dump_stacks` block, and no frame of orch's
    launcher (or runpy's) in a stack faulthandler dumped (a stuck rank's, on SIGTERM): the script's own
    frames stay (pure)."""
    kept: list[str] = []
    hiding = False
    for line in text.splitlines():
        if line.startswith(STACKS_BEGIN):
            hiding = True
        elif hiding:
            hiding = not line.startswith(STACKS_END)
        elif not launcher_frame(line):
            kept.append(line)
    return "\n".join(kept)


def launcher_frame(line: str) -> bool:
    """Whether ``line`` is a faulthandler frame (``  File "X", line N in F``) of orch's own code or runpy's."""
    match = _FRAME_RE.match(line)
    return match is not None and (match.group(1) == "<frozen runpy>" or match.group(1).startswith(_ORCH_DIRS))


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
