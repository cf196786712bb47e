"""``attempts.json`` and the goodput ledger: where a job's time went, attempt by attempt.

Every training attempt of a job (each ``srun`` step of a batch script, each set of ranks of ``orch run``,
across requeues too) adds one entry to ``attempts.json`` in the job folder when it ends:

``attempt``        the attempt inside its allocation (0 first; ``TORCHELASTIC_RESTART_COUNT`` counts both)
``requeue``        Slurm's restart count (SLURM_RESTART_COUNT) of the allocation it ran in
``job``            the Slurm job it ran in (a job submitted again without a blamed node continues the
                   attempts: ``resubmitted_as`` on the last attempt of the job before names it)
``started``        when its step started (wall clock); ``ended`` when it ended
``exit_code``      the step's exit code; ``kind`` completed, preempted, or how it failed (records/restarts/blame.py)
``blamed_rank``    the rank to look at; ``blamed_node`` its node when the evidence points at the node
``resumed_step``   the global step it resumed from (the checkpoint's; 0: from the start)
``lost_steps``     steps finished after the newest checkpoint, redone by the next attempt
``recovery_s``     from this attempt's failure to the first training step of the next one
``in_process``     restarted inside its step by the agents (``launcher.restart: in-process``, the default); ``pids``
                   each rank's process id (a surviving rank keeps its own); ``fallback`` why the agents ended the
                   step; ``by_step`` why a restarted attempt had no agents (launcher.restart: step, a script on
                   several nodes: ``orchestrator/restarts/protocol.py``)

plus what the ledger and the restart policy need (``first_step``, ``last_step_time``, ``failed_at``,
``hung_s``, ``reason``, ``last_step``, ``message``, ``batch_started``). :func:`ledger` sums them into
rank 0's ``result.json`` ``goodput`` (pure); the file functions write through ``records/atomic.py``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from orchestrator.records.atomic import write_text_atomic
from orchestrator.spec.numbers import to_float
from orchestrator.spec.safefile import read_json

ATTEMPTS_FILE = "attempts.json"
RESTART_NEXT_FILE = "restart_next"  # the batch script's next srun: MASTER_ADDR, MASTER_PORT, attempt, node options
RESUBMIT_NEXT_FILE = "resubmit_next"  # the sbatch options of the job submitted again without a blamed node
MAX_BYTES = 4 * 1024 * 1024
# rank 0's checkpoint times (result.json, each checkpoint, the ledger): the training thread's stall in saves
# (the copy to host memory, waits for a write; the whole write when launcher.checkpoint_write is sync), and the
# time writing their files (in the background when async: it overlaps training)
CHECKPOINT_STALL = "checkpoint_stall_s"
CHECKPOINT_WRITE = "checkpoint_write_s"
# the part of the stall between two training steps of one attempt (a save after an attempt's last step, the
# last epoch's or a preemption's, is outside every attempt's first-to-last-step span: nothing to take off)
CHECKPOINT_STALL_IN_TRAINING = "checkpoint_stall_in_training_s"
LEDGER_KEYS = ("allocated_s", "queued_s", "startup_s", "training_s", CHECKPOINT_STALL, CHECKPOINT_WRITE, "redone_s",
               "recovery_s", "hung_s", "goodput")


def read_attempts(job_dir: Path) -> list[dict[str, Any]]:
    """The job's attempts (an unreadable or damaged file reads as none; never raises)."""
    data = read_json(job_dir / ATTEMPTS_FILE, list, MAX_BYTES)  # a regular file of a JSON list, bounded
    return [a for a in data if isinstance(a, dict)] if data is not None else []


def write_attempts(job_dir: Path, attempts: Sequence[Mapping[str, Any]]) -> None:
    write_text_atomic(job_dir / ATTEMPTS_FILE, json.dumps(list(attempts), indent=1, sort_keys=True) + "\n")


def global_step(position: tuple[int, int] | None, steps_per_epoch: int | None, *, one_based: bool) -> int | None:
    """(epoch, step of that epoch) as a step count from the start (None when the epoch length is unknown)."""
    if position is None:
        return None
    epoch, step = position
    done_epochs = epoch - 1 if one_based else epoch
    if done_epochs == 0:
        return step
    return done_epochs * steps_per_epoch + step if steps_per_epoch else None


def lost(last: int | None, resumed: int | None) -> int | None:
    if last is None or resumed is None:
        return None
    return max(0, last - resumed)


def fill_recovery(attempts: list[dict[str, Any]]) -> None:
    """``recovery_s`` of each failed attempt: its failure to the next attempt's first training step."""
    for before, after in itertools.pairwise(attempts):
        failed, first = _num(before.get("failed_at")), _num(after.get("first_step"))
        if before.get("kind") not in ("completed", "preempted") and failed is not None and first is not None:
            before["recovery_s"] = round(max(0.0, first - failed), 3)


def restarts(attempts: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """(restarts inside an allocation, requeues) as ``orch status`` shows them (``1+0``)."""
    in_job = sum(1 for a in attempts if _int(a.get("attempt")) > 0)
    requeues = max((_int(a.get("requeue")) for a in attempts), default=0)
    return in_job, requeues


def restarts_shown(attempts: Sequence[Mapping[str, Any]], slurm_restarts: object = None) -> str | None:
    """The RESTARTS cell of ``orch status`` and ``orch top``: in-job restarts + requeues (``1+0``), the requeues
    as Slurm counts them when it answered (``slurm_restarts``); None when neither knows of any run."""
    in_job, requeues = restarts(attempts)
    if isinstance(slurm_restarts, int) and not isinstance(slurm_restarts, bool):
        return f"{in_job}+{slurm_restarts}"
    return f"{in_job}+{requeues}" if attempts else None


def ledger(attempts: Sequence[Mapping[str, Any]], *, queued_s: float | None,
           checkpoint_stall_s: float = 0.0, checkpoint_write_s: float = 0.0,
           stall_in_training_s: float | None = None) -> dict[str, float | None]:
    """Where the allocated time went (seconds), and the goodput: training time not redone / allocated time;
    None when no attempt saw a training step (a script's steps are its own: orch sees no step of it, so its
    training time is unknown, not 0).

    allocated: each allocation from its batch start to its last attempt's end; startup: from the batch
    start to the first training step of its first attempt; training: first to last training step of
    each attempt (less stall_in_training_s, the training thread's time in rank 0's saves between two steps,
    when known; checkpoint_stall_s, all of it, when that part is not; the background writes of
    checkpoint_write_s overlap training and are not taken off); redone: the share of a failed
    attempt's training that the next attempt does again (its lost steps); recovery: failure to the
    next attempt's first step; hung: from the blamed rank's last step to the failure."""
    allocations: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for a in attempts:  # one allocation: a Slurm job (a resubmitted one is another) and its requeue
        allocations.setdefault((str(a.get("job") or ""), _int(a.get("requeue"))), []).append(a)
    allocated = startup = 0.0
    for group in allocations.values():
        start = _num(group[0].get("batch_started"))
        start = _num(group[0].get("started")) if start is None else start
        end = max((_num(a.get("ended")) or 0.0) for a in group)
        if start is not None and end >= start:
            allocated += end - start
            first = _num(group[0].get("first_step"))
            if first is not None and first >= start:
                startup += first - start
    training = redone = recovery = hung = 0.0
    for a in attempts:
        first, last = _num(a.get("first_step")), _num(a.get("last_step_time"))
        span = max(0.0, last - first) if first is not None and last is not None else 0.0
        training += span
        lost_steps, done = a.get("lost_steps"), _done_steps(a)
        if isinstance(lost_steps, int) and done:
            redone += span * min(1.0, lost_steps / done)
        recovery += _num(a.get("recovery_s")) or 0.0
        hung += _num(a.get("hung_s")) or 0.0
    inside = checkpoint_stall_s if stall_in_training_s is None else min(stall_in_training_s, checkpoint_stall_s)
    training = max(0.0, training - inside)
    out = {"allocated_s": allocated, "queued_s": queued_s or 0.0, "startup_s": startup, "training_s": training,
           CHECKPOINT_STALL: checkpoint_stall_s, CHECKPOINT_WRITE: checkpoint_write_s,
           "redone_s": min(redone, training), "recovery_s": recovery, "hung_s": hung}
    rounded: dict[str, float | None] = {k: round(v, 3) for k, v in out.items()}
    useful = training - round(out["redone_s"], 3)
    seen = any(_num(a.get("first_step")) is not None for a in attempts)
    rounded["goodput"] = (round(min(1.0, max(0.0, useful / allocated)), 4) if allocated > 0 else 0.0) if seen else None
    return rounded


def _done_steps(a: Mapping[str, Any]) -> int | None:
    last, resumed = a.get("last_global_step"), a.get("resumed_step")
    if isinstance(last, int) and isinstance(resumed, int) and last > resumed:
        return last - resumed
    return None


def _num(value: object) -> float | None:
    return to_float(value)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def format_attempts(attempts: Sequence[Mapping[str, Any]]) -> list[str]:
    """``orch status JOB``'s lines: one per attempt."""
    lines = []
    for a in attempts:
        where = f" rank {a['blamed_rank']}" if a.get("blamed_rank") is not None else ""
        node = f" on {a['blamed_node']}" if a.get("blamed_node") else ""
        parts = [f"attempt {a.get('attempt')} (requeue {a.get('requeue', 0)}): {a.get('kind')}{where}{node}",
                 f"exit {a.get('exit_code')}"]
        for key, label in (("resumed_step", "resumed at step"), ("lost_steps", "lost steps"),
                           ("recovery_s", "recovery s")):
            if a.get(key) is not None:
                parts.append(f"{label} {a[key]}")
        if a.get("in_process") is True:
            parts.append("restarted in its step (the other ranks' processes stayed)")
        elif a.get("fallback"):
            parts.append(f"not restarted in its step: {a['fallback']}")
        elif a.get("by_step"):
            parts.append(f"restarted by step: {a['by_step']}")
        if a.get("message"):
            parts.append(str(a["message"]))
        if a.get("resubmitted_as"):
            parts.append(f"submitted again without {a.get('blamed_node')} as job {a['resubmitted_as']}")
        lines.append("; ".join(parts))
    return lines


def format_ledger(goodput: Mapping[str, Any]) -> str:
    values = {k: to_float(goodput.get(k)) for k in LEDGER_KEYS}  # numbers a float holds, else left out
    shown = [f"{k[:-2]} {v:.1f}s" for k, v in values.items() if k != "goodput" and v is not None]
    share = values["goodput"]
    said = f"goodput {share:.1%}" if share is not None else "goodput unknown (no training step was seen)"
    return f"{said} (" + ", ".join(shown) + ")"
