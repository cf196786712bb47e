"""This task's outcome record in the job folder (the task side of :mod:`orchestrator.records.restarts.blame`).

``orchestrator.task.launch`` starts the record (``running``) once it knows the task's rank, and rewrites
it once when the task ends: completed, its own failure, gave up waiting in a collective, or stopped
by a signal while running (from the SIGTERM handler, after :mod:`orchestrator.task.hang` dumped the
stacks). While the task runs, the runtime tells the recorder, in memory only, the last training step
it finished and which timeout is in force; both go into the final record. Each write replaces the
file atomically (a temporary file, then ``os.replace``). :func:`read_outcomes` reads a job folder's
records for ``orch run``, ``orch status`` and ``orch logs``. No torch here.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.env.devices import host_name
from orchestrator.records.atomic import write_text_atomic
from orchestrator.records.joblayout import outcome_rank
from orchestrator.records.restarts.rankoutcome import Kind, LastStep, RankOutcome, WorldJoin, parse_outcome
from orchestrator.spec.runconfig import LOG_DIR
from orchestrator.spec.safefile import open_regular
from orchestrator.task import hang

log = logging.getLogger(__name__)

INIT_TIMEOUT = "launcher.init_timeout"  # start-up, build, rendezvous, checkpoints
COLLECTIVE_TIMEOUT = "launcher.collective_timeout"  # training


@dataclass
class Recorder:
    """One task's record; inactive (every call a no-op) until :meth:`start`."""

    path: Path | None = None
    base: dict[str, Any] = field(default_factory=dict)
    last_step: tuple[int, int, float] | None = None  # epoch (1-based), step, wall time
    timeout: tuple[int, str] | None = None  # in force: seconds, the setting that sets it
    settings: dict[str, int] = field(default_factory=dict)  # launcher.init_timeout and collective_timeout
    stopped_by: str = ""  # who sends this task SIGTERM: "srun" or "orch run"
    first_step: float | None = None  # when the first training step of this attempt ended (recovery_s); a script's:
    # when its world formed (init_process_group returned: orch sees no training step of a script)
    world: WorldJoin | None = None  # a script's world, once watched (task/worldcheck.py)
    final: bool = False
    exit_code: int | None = None  # the final record's

    def start(self, path: Path, *, rank: int, world_size: int, run: str, restart: int, stopped_by: str,
              init_timeout: int, collective_timeout: int) -> None:
        self.path, self.final, self.last_step, self.stopped_by = path, False, None, stopped_by
        self.exit_code = None
        self.first_step, self.world = None, None
        self.settings = {INIT_TIMEOUT: init_timeout, COLLECTIVE_TIMEOUT: collective_timeout}
        self.timeout = (init_timeout, INIT_TIMEOUT)  # start-up until the runtime says otherwise
        self.base = {"rank": rank, "world_size": world_size, "run": run[:200], "restart": restart,
                     "host": host_name(os.environ, socket.gethostname())[:255], "pid": os.getpid(),
                     "started": time.time()}
        self._write("running")

    def step(self, epoch: int, step: int) -> None:
        """A training step finished (called after every step: an assignment, no I/O but the first's)."""
        self.last_step = (epoch, step, time.time())
        if self.first_step is None:
            self.first_step = self.last_step[2]
            self._say_first_step()

    def _say_first_step(self) -> None:
        """The running record says when the first step ended (once an attempt): a rank killed later (SIGKILL) still
        tells when its attempt began training (the attempt before's ``recovery_s``), not its later steps."""
        if self.path is not None and not self.final and os.getpid() == self.base.get("pid"):
            with signals_held():
                self._write("running", with_last=False)

    def joined(self, world: WorldJoin | None) -> None:
        """What this rank's world is now (watched, or joined; None: not known): the running record says it at once."""
        self.world = world
        if world is not None and world.size is not None and self.first_step is None:  # a script's first step
            self.first_step = time.time()
        if self.path is not None and not self.final and os.getpid() == self.base.get("pid"):
            with signals_held():  # a SIGTERM meanwhile writes its final record after this one, never before
                self._write("running")

    def timeout_in_force(self, seconds: int, setting: str) -> None:
        self.timeout = (seconds, setting)

    def finish(self, kind: Kind, exit_code: int | None, *, reason: str | None = None, how: str | None = None,
               timeout_s: int | None = None, signal_name: str | None = None) -> None:
        """The final record (the first call wins: a signal arriving while exiting changes nothing)."""
        if self.path is None or self.final or os.getpid() != self.base.get("pid"):
            return
        # orch run's or srun's SIGTERM from here on waits: once this call is the first, its record lands whole
        with signals_held():
            self.final, self.exit_code = True, exit_code
            extra: dict[str, Any] = {"exit_code": exit_code, "reason": reason[:2000] if reason else None}
            if kind == "waited":
                extra["how"] = how
                if how == "timeout":
                    seconds = timeout_s if timeout_s is not None else (self.timeout[0] if self.timeout else None)
                    extra.update(timeout_s=seconds, timeout_setting=self._setting(seconds))
            if kind == "signalled":
                extra.update(signal=signal_name, stopped_by=self.stopped_by)
            self._write(kind, **extra)

    def _setting(self, seconds: int | None) -> str | None:
        """The setting that set ``seconds``: the one in force when the value matches it, else the one
        setting of that value (a collective started before the timeout changed), else None."""
        if self.timeout is not None and seconds in (None, self.timeout[0]):
            return self.timeout[1]
        named = [name for name, value in self.settings.items() if value == seconds]
        return named[0] if len(named) == 1 else None

    def _write(self, kind: Kind, *, with_last: bool = True, **extra: Any) -> None:
        assert self.path is not None
        last = None
        if self.last_step is not None and with_last:
            last = LastStep(epoch=self.last_step[0], step=self.last_step[1], time=self.last_step[2])
        try:
            record = RankOutcome(**self.base, kind=kind, ended=None if kind == "running" else time.time(),
                                 last_step=last, first_step=self.first_step, world=self.world, **extra)
            write_text_atomic(self.path, json.dumps(record.model_dump(mode="json", exclude_none=True),
                                                    sort_keys=True) + "\n")
        except (OSError, ValueError) as exc:  # a full disk must not change how the task ends
            log.warning("cannot write %s: %s", self.path, exc)


HELD_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT})


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGTERM and SIGINT wait while the final record is written: their handlers end the process, and one
    running between the temporary file and its rename would leave the record saying ``running`` (a rank
    that gave up waiting, its last step lost, judged as one that ended without a word). They are
    delivered as soon as the record is whole.

    In the main thread the hold is Python's: a handler that only notes the signal, then the handlers that
    were set, and the noted signals raised again. A C-level mask (``pthread_sigmask``) holds a signal for the
    calling thread only, and the kernel hands a signal sent to the process to any thread that does not
    block it (a rank has torch's and gloo's threads): Python then runs its handler in the main thread at
    once, mask or not. Elsewhere (no Python handler can be set there) the calling thread's mask it is."""
    if threading.current_thread() is not threading.main_thread():
        with _masked():
            yield
        return
    noted: list[int] = []
    previous: dict[signal.Signals, Any] = {}
    for sig in sorted(HELD_SIGNALS):
        if signal.getsignal(sig) is not None:  # None: a handler not set from Python cannot be put back
            previous[sig] = signal.signal(sig, lambda signum, _frame: noted.append(signum))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        hang.register_again(previous)  # the stack dumps of a stuck rank's SIGTERM, replaced above
        for signum in dict.fromkeys(noted):
            signal.raise_signal(signum)


@contextlib.contextmanager
def _masked() -> Iterator[None]:
    try:
        before = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)
    except (AttributeError, OSError, ValueError):  # no pthread_sigmask here
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


RECORDER = Recorder()  # this process's record (the runtime reports steps and timeouts to it)
OUTCOME_MAX_BYTES = 64 * 1024  # a record is a few hundred bytes; anything larger is not one


def read_outcomes(job_dir: Path) -> tuple[list[RankOutcome], list[str]]:
    """The ranks' outcome records, and a note for each file that is not a valid one (never raises)."""
    records: list[RankOutcome] = []
    notes: list[str] = []
    try:
        names = sorted(p.name for p in (job_dir / LOG_DIR).iterdir())
    except OSError:
        return [], []
    for name in names:
        rank = outcome_rank(name)
        if rank is None:
            continue
        try:
            with open_regular(job_dir / LOG_DIR / name) as fh:  # a FIFO or a device is refused, never read
                raw = fh.read(OUTCOME_MAX_BYTES + 1)
        except OSError as exc:
            notes.append(f"{name}: cannot be read ({exc.strerror})")
            continue
        parsed = parse_outcome(raw.decode("utf-8", errors="replace")) if len(raw) <= OUTCOME_MAX_BYTES \
            else "larger than a record can be"
        if isinstance(parsed, str):
            notes.append(f"{name}: not an outcome record ({parsed}); ignored")
        elif parsed.rank != rank:
            notes.append(f"{name}: holds rank {parsed.rank}'s record; ignored")
        else:
            records.append(parsed)
    return records, notes


def remove_outcomes(job_dir: Path) -> None:
    """Remove the outcome records of an earlier run (``orch run`` before it starts the ranks)."""
    with contextlib.suppress(OSError):
        for path in (job_dir / LOG_DIR).iterdir():
            if outcome_rank(path.name) is not None:
                with contextlib.suppress(OSError):
                    path.unlink()

