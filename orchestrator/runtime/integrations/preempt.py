"""Preemption in a script's own training loop: every rank agrees on the step to stop, then exits with 75.

orch's contract for scripts (docs/preemption-and-restarts.md): the preemption signal
(``$ORCH_PREEMPT_SIGNAL``, USR2) reaches every rank, perhaps at different times; a script that saves its
state and exits with ``REQUEUE_EXIT`` (75) is requeued, and the next run sees
``TORCHELASTIC_RESTART_COUNT`` one higher. :class:`Preemption` is that contract for a loop: call
``should_stop()`` on every rank at every optimizer step; it is the same vote orch's own entrypoint takes
(:class:`orchestrator.runtime.dist.StopVote`: an asynchronous all-reduce of the flag, so it overlaps the
step and every rank gets the same answer at the same step), through a CPU (gloo) group. Then save (rank 0
writes) and call ``requeue()`` on every rank.

The flag is the one the task installed before the script started (so a signal during start-up counts);
outside orch (plain ``python`` or ``torchrun``) the handler is installed here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import torch.distributed as dist

from orchestrator.runtime.dist import StopVote
from orchestrator.spec.script import REQUEUE_EXIT
from orchestrator.task import preempt

SIGNAL_VAR = "ORCH_PREEMPT_SIGNAL"
RESTART_VAR = "TORCHELASTIC_RESTART_COUNT"
JOB_DIR_VAR = "ORCH_JOB_DIR"
CHECKPOINT_FOLDER = "preempt"  # under the job folder: where the integrations keep their checkpoints


@dataclass(frozen=True)
class _Control:
    control: Any  # the process group the vote goes through (None: the default group)


def preempt_flag() -> preempt.PreemptFlag:
    """The flag the task installed, else one installed now for ``$ORCH_PREEMPT_SIGNAL`` (USR2)."""
    return preempt.installed() or preempt.PreemptFlag(os.environ.get(SIGNAL_VAR, "USR2")).install()


def resuming() -> bool:
    """Whether this run follows a requeue or restart (``TORCHELASTIC_RESTART_COUNT`` above 0)."""
    return os.environ.get(RESTART_VAR, "0").strip() not in ("", "0")


def checkpoint_dir() -> Path:
    """Where a preemption checkpoint goes: ``$ORCH_JOB_DIR/preempt`` (the same folder after a requeue and
    for ``orch run --resume``), else ``./preempt`` outside orch."""
    return Path(os.environ.get(JOB_DIR_VAR) or ".") / CHECKPOINT_FOLDER


def _control_group() -> Any:
    """None (the default group) when it reduces CPU tensors (gloo); else a new gloo group (every rank
    creates it at the same call: the first vote)."""
    backend = str(dist.get_backend())
    return None if "gloo" in backend else dist.new_group(backend="gloo")


class Preemption:
    """Every rank calls ``should_stop()`` at each optimizer step; all get True at the same step, one or two
    steps after the signal reached the last rank. Then checkpoint and call ``requeue()`` on every rank."""

    def __init__(self, flag: preempt.PreemptFlag | None = None) -> None:
        self.flag = flag if flag is not None else preempt_flag()
        self._vote: StopVote | None = None
        self.stopped = False

    def should_stop(self) -> bool:
        if not (dist.is_available() and dist.is_initialized()):  # one process: its own flag decides
            self.stopped = self.stopped or self.flag.requested
            return self.stopped
        if self._vote is None:
            self._vote = StopVote(self.flag, _Control(_control_group()))
        self.stopped = self.stopped or self._vote.should_stop()
        return self.stopped

    def finish(self) -> None:
        """Wait for the vote in flight (at the end of training, before the process group goes)."""
        if self._vote is not None:
            self._vote.drain()

    def requeue(self) -> NoReturn:
        """Exit with orch's requeue code (after the checkpoint is written; on every rank)."""
        self.finish()
        raise SystemExit(REQUEUE_EXIT)
