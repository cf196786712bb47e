"""A bound for every script: its process group waits ``launcher.collective_timeout`` in a collective
(``--collective-timeout``), unless the script passes its own ``timeout=`` (the task's side of
``orchestrator/runtime/pgtimeout.py``, which wraps ``init_process_group``; no torch here).

Every launch style gets it: env, local-rank-arg and slurm scripts call ``init_process_group`` in this
process; a per-node script's spawned processes install it themselves (``torch.multiprocessing`` is wrapped).
The timeout in force lands in the task's outcome record, so a rank that gave up says which setting it waited.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from orchestrator.spec.runconfig import RunConfig
from orchestrator.task.outcome import COLLECTIVE_TIMEOUT, RECORDER

SCRIPT_TIMEOUT = "the script's own timeout="  # the setting named in the outcome record when the script chose


class Bounder(Protocol):
    def bound_timeout(self, *, init_timeout: int, collective_timeout: int,
                      on_applied: Callable[[int, bool], None]) -> None:
        """Scripts: ``init_process_group`` bounded (runtime.pgtimeout); ``on_applied(seconds, orchs)`` after each."""


def bound(cfg: RunConfig, runtime: Bounder) -> None:
    """Bound the script's process groups with the job's ``launcher.collective_timeout``."""
    runtime.bound_timeout(init_timeout=cfg.launcher.init_timeout, collective_timeout=cfg.launcher.collective_timeout,
                          on_applied=record_timeout)


def record_timeout(seconds: int, orchs: bool) -> None:
    """The timeout in force from now on, and who set it (the outcome record's ``timeout_setting``)."""
    RECORDER.timeout_in_force(seconds, COLLECTIVE_TIMEOUT if orchs else SCRIPT_TIMEOUT)
