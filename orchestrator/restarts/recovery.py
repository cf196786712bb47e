"""After a training attempt ends (an ``srun`` step, or the ranks of ``orch run``): record it in
``attempts.json``, decide whether to restart it (``restarts/policy.py``), and keep rank 0's
``result.json`` ``goodput`` ledger current (``records/restarts/attempts.py``). Reads the job folder (outcome
records, checkpoint sidecar, progress.json); the rules themselves are pure. No torch here.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import OrchError
from orchestrator.records.atomic import write_text_atomic
from orchestrator.records.restarts import attempts as attempts_file
from orchestrator.records.restarts.blame import Blame, blame
from orchestrator.records.restarts.rankoutcome import current_run
from orchestrator.records.restarts.seen import Seen, complete
from orchestrator.records.resumecheck import LATEST, parse_sidecar, sidecar_path
from orchestrator.restarts import heartbeat, protocol
from orchestrator.restarts.policy import Decision, Ended, decide
from orchestrator.spec.numbers import to_float, to_int
from orchestrator.spec.runconfig import CHECKPOINT_DIR, PROGRESS_FILE, REQUEUE_FILE, RESULT_FILE, RunConfig
from orchestrator.spec.safefile import read_json
from orchestrator.task.outcome import read_outcomes

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AttemptFacts:
    """What the caller saw of the attempt (the batch script or orch run)."""

    attempt: int  # 0-based, inside this allocation
    requeue: int  # SLURM_RESTART_COUNT (0 for orch run)
    exit_code: int
    started: float  # when the attempt's step started
    batch_started: float | None = None  # when the allocation's batch script (or orch run) started
    interrupted: bool = False  # the job itself got a signal (preemption signal, scancel, Ctrl-C)
    run: str | None = None  # Slurm's job id of the records (None: the newest present)
    resumed_step: int | None = None  # known by the caller (the previous decision's checkpoint), else read
    step_nodes: tuple[str, ...] = ()  # Slurm: the step's nodes in order (rank R on R // tasks_per_node)
    seen: Seen | None = None  # what the launcher saw of the ranks' ends (orch run; srun's report in the batch log)
    hung_s: float | None = None  # how long the blamed rank had hung, when its in-process agent saw it and killed it
    loopback: bool = True  # MASTER_ADDR was this machine's (orch run; a one-node Slurm job): see protocol.by_step


def checkpoint_step(job_dir: Path, steps_per_epoch: int | None) -> int:
    """The global step of the newest checkpoint (0: none, the next attempt starts from the beginning)."""
    try:
        raw = sidecar_path(job_dir / CHECKPOINT_DIR / LATEST).read_bytes()[:65536]
        sidecar = parse_sidecar(raw, LATEST + ".json")
    except (OSError, ValueError, OrchError):  # no sidecar or a damaged one: nothing to resume
        return 0
    step = attempts_file.global_step((sidecar.epoch, sidecar.step), steps_per_epoch, one_based=False)
    return step or 0


def steps_per_epoch(job_dir: Path) -> int | None:
    data = read_json(job_dir / PROGRESS_FILE, dict)
    steps = to_int(data.get("steps")) if data is not None else None
    return steps if steps is not None and steps > 0 else None


def end_attempt(job_dir: Path, cfg: RunConfig, facts: AttemptFacts, *, now: float | None = None,
                in_process: bool = False) -> Decision:
    """Record the attempt that just ended in ``attempts.json``, update the ledger, and say whether to restart.

    ``in_process``: an agent asks (restarts/agent.py); the attempt is recorded only when it is restarted in the
    step's processes (else the step ends, and the batch script or orch run records it as before)."""
    now = time.time() if now is None else now
    records, notes = read_outcomes(job_dir)
    kept = [r for r in records if r.rank < cfg.world_size and (facts.run is None or r.run == facts.run)]
    kept = [r for r in complete(kept, facts.seen) if r.rank < cfg.world_size]  # a rank killed without a word
    by_rank, _ = current_run(kept)
    fallback = None if in_process else _take_fallback(job_dir)  # why the agents ended the step, if they did
    found = _stopped_agent(fallback, facts.exit_code) or blame(kept, world_size=cfg.world_size, notes=notes)
    history = attempts_file.read_attempts(job_dir)
    previous = history[-1] if history else None
    ended = Ended(attempt=facts.attempt, exit_code=facts.exit_code, blame=found, records=by_rank,
                  requeue=(job_dir / REQUEUE_FILE).exists(), interrupted=facts.interrupted, previous=previous)
    decision = decide(ended, max_restarts=cfg.launcher.max_restarts)
    if in_process and not decision.restart:
        return decision
    if decision.blamed_node is not None and decision.blamed_rank is not None and facts.step_nodes:
        index = decision.blamed_rank // max(1, cfg.tasks_per_node)  # srun's block distribution
        if index < len(facts.step_nodes):  # Slurm's node name, not the host name the rank saw
            decision = dataclasses.replace(decision, blamed_node=facts.step_nodes[index])
    per_epoch = steps_per_epoch(job_dir)
    firsts = [r.first_step for r in by_rank.values() if r.first_step is not None]
    lasts = [r.last_step for r in by_rank.values() if r.last_step is not None]
    last_time = max((s.time for s in lasts), default=None)
    last_global = max((g for s in lasts if (g := attempts_file.global_step((s.epoch, s.step), per_epoch,
                                                                          one_based=True)) is not None), default=None)
    resumed = facts.resumed_step
    if resumed is None:
        resumed = previous.get("next_step") if previous is not None else 0
    if not isinstance(resumed, int):
        resumed = None
    finished = decision.kind in ("completed", "preempted")
    ends = [r.ended for r in by_rank.values() if r.ended is not None and r.kind != "completed"]
    failed_at = None if finished else min(ends, default=now)
    hung = None
    if decision.kind == "stuck" and failed_at is not None and decision.blamed_rank is not None:
        stuck = by_rank.get(decision.blamed_rank)
        if stuck is not None and stuck.last_step is not None:
            hung = round(max(0.0, failed_at - stuck.last_step.time), 3)
    if decision.kind == "stuck" and hung is None:  # killed by its agent: its record has no last step
        hung = facts.hung_s
    next_step = checkpoint_step(job_dir, per_epoch) if decision.kind != "completed" else None
    entry: dict[str, Any] = {
        "attempt": facts.attempt, "requeue": facts.requeue, "job": facts.run, "started": round(facts.started, 3),
        "ended": round(now, 3), "exit_code": facts.exit_code, "kind": decision.kind,
        "blamed_rank": decision.blamed_rank, "blamed_node": decision.blamed_node, "resumed_step": resumed,
        "lost_steps": attempts_file.lost(last_global, next_step),
        "recovery_s": None, "first_step": min(firsts, default=None), "last_step_time": last_time,
        "last_global_step": last_global, "failed_at": failed_at, "hung_s": hung, "reason": decision.reason,
        "last_step": list(decision.last_step) if decision.last_step else None, "message": decision.message or None,
        "restarted": decision.restart, "next_step": next_step, "batch_started": facts.batch_started,
        "in_process": in_process, "pids": protocol.pids(by_rank),
    }
    if fallback is not None:
        entry["fallback"] = fallback  # the agents handed this failure to the step-level restart
    elif not in_process and decision.restart and \
            (why := protocol.by_step(cfg, preflight=False, loopback=facts.loopback)) is not None:
        entry["by_step"] = why  # no agents: the step-level restart is this job's (launcher.restart: step, ...)
    history.append(entry)
    attempts_file.fill_recovery(history)
    try:
        attempts_file.write_attempts(job_dir, history)
        update_ledger(job_dir, history, cfg)
    except OSError as exc:  # a full disk must not change how the job ends
        log.warning("cannot write %s: %s", job_dir / attempts_file.ATTEMPTS_FILE, exc)
    return decision


def _stopped_agent(fallback: str | None, exit_code: int) -> Blame | None:
    """A rank whose agent the others found stopped (``agent_stopped``): hung, as a rank that stopped making
    progress is (its worker may have trained on: its record cannot say it), and its node the one to look at."""
    found = heartbeat.stopped_agent_rank(fallback)
    if found is None:
        return None
    rank, how = found
    return Blame(kind="stuck", ranks=(rank,), exit_code=exit_code,
                 message=f"{how}: nobody could decide for rank {rank} in the step, which its peers ended")


def _take_fallback(job_dir: Path) -> str | None:
    """Why an agent ended the step instead of restarting in it (restarts/agent.py), read once."""
    path = job_dir / protocol.FALLBACK_FILE
    try:
        text = path.read_bytes()[:2000].decode("utf-8", "replace").strip()
        path.unlink()
    except OSError:
        return None
    return text or None


def update_ledger(job_dir: Path, history: list[dict[str, Any]], cfg: RunConfig) -> None:
    """Rank 0's ``result.json`` gets ``goodput`` (when the job wrote one: a finished run)."""
    path = job_dir / RESULT_FILE
    result = read_json(path, dict)  # a regular file holding a JSON object, bounded; else None
    if result is None:
        return
    startup = result.get("startup")
    queued = to_float(startup.get("queued")) if isinstance(startup, dict) else None
    # rank 0's checkpoint times of the run that completed (resumed ones included)
    result["goodput"] = attempts_file.ledger(
        history, queued_s=queued, checkpoint_stall_s=to_float(result.get(attempts_file.CHECKPOINT_STALL)) or 0.0,
        checkpoint_write_s=to_float(result.get(attempts_file.CHECKPOINT_WRITE)) or 0.0,
        stall_in_training_s=to_float(result.get(attempts_file.CHECKPOINT_STALL_IN_TRAINING)))
    write_text_atomic(path, json.dumps(result, indent=1, sort_keys=True) + "\n")
