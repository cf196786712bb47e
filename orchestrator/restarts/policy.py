"""Restart inside the allocation: is a failed attempt worth another one? One pure function, one table.

After every training step (an ``srun`` step under Slurm, the ranks of ``orch run``) the caller hands
:func:`decide` what it knows about the attempt that just ended: its exit code, the ranks' outcome
records (``records/restarts/blame.py``'s verdict over them), whether the ranks asked for a requeue (preemption
keeps its own path), and the attempt before it (``attempts.json``). The verdict: restart or not, the
attempt's kind, and, when no restart is tried, the one line that says why. No I/O here.

Failures that will repeat are not restarted (:data:`NO_RESTART`, first match wins): a full disk or quota (a
write found no space: the next attempt's first checkpoint would too), a usage or configuration error (exit 2:
bad input, a doctor error, a damaged resume folder), the non-finite-loss stop, and the same exception at the
same step as the attempt before. Everything else that failed (a rank's exception the first time, a rank killed
by a signal, a hang caught by the watchdog, an NCCL error, a lost node) is restarted while ``max_restarts``
allows.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from orchestrator.records.restarts.blame import Blame
from orchestrator.records.restarts.rankoutcome import RankOutcome
from orchestrator.spec.numbers import FULL_DISK

USAGE_EXIT = 2  # OrchError's exit code for bad input (usage, configuration, doctor, resume folder)
REQUEUE_EXIT = 75  # a script asks for a requeue (orchestrator.spec.script.REQUEUE_EXIT)
SAME_ERROR = "the same error at the same step: not restarted again"
# Evidence against a node (records/restarts/badnodes.py takes these): a rank that vanished or hung, or a device error.
NODE_KINDS = frozenset({"vanished", "stuck"})
DEVICE_ERROR_WORDS = ("NCCL", "CUDA", "cuda", "ECC", "Xid")


@dataclass(frozen=True)
class Ended:
    """What is known about an attempt that just ended."""

    attempt: int  # 0-based
    exit_code: int  # the step's (srun's) or the run's exit code
    blame: Blame | None  # records/restarts/blame.py over the attempt's records (None: nothing went wrong)
    records: Mapping[int, RankOutcome]  # the attempt's records by rank
    requeue: bool = False  # the ranks checkpointed for a requeue (preemption)
    interrupted: bool = False  # the job itself was signalled (preemption signal, scancel, Ctrl-C)
    previous: Mapping[str, Any] | None = None  # the attempt before, as attempts.json holds it


@dataclass(frozen=True)
class Decision:
    restart: bool
    kind: str  # completed | preempted | interrupted | failed | vanished | stuck | ... (the blame's kind)
    message: str  # why no restart (empty when restarting or completed)
    blamed_rank: int | None = None
    blamed_node: str | None = None
    reason: str | None = None  # the blamed rank's one-line reason (compared with the next attempt's)
    last_step: tuple[int, int] | None = None  # the blamed rank's last finished step (epoch, step)


NO_SPACE = tuple(os.strerror(code) for code in sorted(FULL_DISK))  # as an OSError's message says it


def _full_disk(e: Ended) -> str | None:
    if e.blame is None or e.blame.kind != "failed":
        return None
    said = f"{e.blame.message} {_reason(e) or ''}"
    words = next((w for w in NO_SPACE if w in said), None)
    if words is None:
        return None
    return (f"the disk is full ({words}): a restart would fail at its next write: not restarted (free space on it, "
            "then orch resubmit)")


def _usage(e: Ended) -> str | None:
    code = e.blame.exit_code if e.blame is not None and e.blame.exit_code is not None else e.exit_code
    if code == USAGE_EXIT and (e.blame is None or e.blame.kind == "failed"):
        return "a usage or configuration error (exit code 2) would repeat: not restarted"
    return None


def _nonfinite(e: Ended) -> str | None:
    if e.blame is not None and e.blame.kind == "failed" and "non-finite" in e.blame.message:
        return "the training stopped on a non-finite loss, which would repeat: not restarted"
    return None


def _same_error(e: Ended) -> str | None:
    prev = e.previous
    if prev is None or e.blame is None or e.blame.kind != "failed":
        return None
    reason, step = _reason(e), _last_step(e)
    if prev.get("kind") == "failed" and prev.get("reason") == reason and _as_step(prev.get("last_step")) == step:
        return SAME_ERROR
    return None


# Failures that will repeat: (name, test). The first test that returns a message wins.
NO_RESTART: tuple[tuple[str, Callable[[Ended], str | None]], ...] = (
    ("full_disk", _full_disk),
    ("usage", _usage),
    ("nonfinite", _nonfinite),
    ("same_error", _same_error),
)


def decide(e: Ended, *, max_restarts: int) -> Decision:
    """Restart the attempt that just ended, or not (and why)."""
    rank = e.blame.ranks[0] if e.blame is not None and e.blame.ranks else None
    kind = e.blame.kind if e.blame is not None else "failed"
    base = Decision(False, kind, "", blamed_rank=rank, blamed_node=blamed_node(e), reason=_reason(e),
                    last_step=_last_step(e))
    if e.requeue or e.exit_code == REQUEUE_EXIT:
        return replace(base, kind="preempted")
    if e.exit_code == 0 and e.blame is None:
        return replace(base, kind="completed")
    if e.interrupted:
        return replace(base, kind="interrupted", message="the job was stopped by a signal: not restarted")
    for _name, test in NO_RESTART:
        why = test(e)
        if why is not None:
            return replace(base, message=why)
    if e.attempt >= max_restarts:
        used = f"{max_restarts} restart{'s' if max_restarts != 1 else ''}"
        why = ("restarts are off (--max-restarts 0)" if max_restarts == 0
               else f"the {used} allowed (--max-restarts {max_restarts}) are used up")
        return replace(base, message=why)
    return replace(base, restart=True)


def blamed_node(e: Ended) -> str | None:
    """The node the evidence points at: a rank that vanished (signal death, lost node) or stopped making
    progress, or one whose error names the device; never a Python exception in user code."""
    if e.blame is None or not e.blame.ranks:
        return None
    record = e.records.get(e.blame.ranks[0])
    if record is None:
        return None
    device = e.blame.kind == "failed" and any(word in (record.reason or "") for word in DEVICE_ERROR_WORDS)
    return record.host if e.blame.kind in NODE_KINDS or device else None


def _reason(e: Ended) -> str | None:
    if e.blame is None or not e.blame.ranks:
        return None
    record = e.records.get(e.blame.ranks[0])
    return record.reason if record is not None else None


def _last_step(e: Ended) -> tuple[int, int] | None:
    if e.blame is None or not e.blame.ranks:
        return None
    record = e.records.get(e.blame.ranks[0])
    if record is None or record.last_step is None:
        return None
    return record.last_step.epoch, record.last_step.step


def _as_step(value: object) -> tuple[int, int] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return int(value[0]), int(value[1])
    return None
