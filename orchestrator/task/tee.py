"""``orch exec``'s task: the task process (``python -m orchestrator.runtime.launch --job-dir DIR``) as a child,
its output copied both to orch exec's own stdout/stderr (where the user's srun sends them: the batch log
by default) and to the rank's log in the job folder (``logs/<job id>-rank<R>.out``, stdout and stderr
together, as srun --output writes orch's own rank logs), so ``orch logs`` reads it.

Slurm signals every process of the step (scancel, the time limit, the preemption signal): the child
gets them directly, and handles them as orch's own tasks do. This process only copies: it ignores
those signals while the child runs, then ends as the child did: its exit code, or killed by its signal.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from orchestrator.task.lines import end_line

LOG_MODE = 0o600
CHUNK = 65536
DRAIN_SECONDS = 2.0  # after the child ended: how long a descendant still holding its pipes may keep them open
FORWARDED_BY_SLURM = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGCONT")


def _write_all(fd: int, data: bytes) -> bool:
    """Write ``data`` whole; False when ``fd`` is gone (a closed pipe: the copy there stops, the log's goes on)."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        return False
    return True


def ignored_signals(preempt_signal: str) -> list[signal.Signals]:
    """The signals this process ignores while the child runs (Slurm sends them to the child too)."""
    names = {*FORWARDED_BY_SLURM, preempt_signal if preempt_signal.startswith("SIG") else f"SIG{preempt_signal}"}
    return [getattr(signal, name) for name in sorted(names) if hasattr(signal, name) and name != "SIGCONT"]


def run_teed(argv: Sequence[str], env: Mapping[str, str], log: Path, *, ignore: Sequence[signal.Signals],
             out_fd: int = 1, err_fd: int = 2) -> int:
    """Run ``argv``; copy its stdout to ``out_fd``, its stderr to ``err_fd``, both to ``log`` (appended, 0600).
    The child's exit status: a code, or ``-N`` when signal N ended it (:func:`end_like`)."""
    log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), LOG_MODE)
    try:
        proc = subprocess.Popen(list(argv), env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in ignore}
        try:
            assert proc.stdout is not None and proc.stderr is not None
            try:
                _copy(proc, {proc.stdout.fileno(): out_fd, proc.stderr.fileno(): err_fd}, log_fd)
                with contextlib.suppress(OSError):
                    end_line(log_fd)  # a rank cut off mid-line: the next attempt's first line starts a line
            finally:
                proc.stdout.close()
                proc.stderr.close()
            return proc.wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    finally:
        os.close(log_fd)


def _copy(proc: subprocess.Popen[bytes], targets: dict[int, int], log_fd: int) -> None:
    """Copy from each pipe of ``targets`` (pipe fd -> where it goes) and to ``log_fd`` until every pipe is at
    its end, or :data:`DRAIN_SECONDS` after the child ended."""
    selector = selectors.DefaultSelector()
    for pipe in targets:
        selector.register(pipe, selectors.EVENT_READ)
    alive = dict(targets)
    ended_at: float | None = None
    try:
        while alive:
            if ended_at is None and proc.poll() is not None:
                ended_at = time.monotonic()
            if ended_at is not None and time.monotonic() - ended_at > DRAIN_SECONDS:
                return  # something the child left behind holds its pipes: stop copying, the child has ended
            for key, _ in selector.select(timeout=0.2):
                try:
                    data = os.read(key.fd, CHUNK)
                except OSError:
                    data = b""
                if not data:
                    selector.unregister(key.fd)
                    alive.pop(key.fd, None)
                    continue
                target = alive[key.fd]
                if target >= 0 and not _write_all(target, data):
                    alive[key.fd] = -1
                _write_all(log_fd, data)
    finally:
        selector.close()


def end_like(status: int) -> int:
    """End as the child did: killed by the same signal (SIG_DFL) when a signal ended it; else its code."""
    if status < 0:
        with contextlib.suppress(OSError, ValueError):
            signal.signal(-status, signal.SIG_DFL)
            os.kill(os.getpid(), -status)
            time.sleep(1)
        return 128 - status
    return status
