"""``orch run`` with restarts: the same as inside a Slurm allocation, with local processes.

Each attempt is one :class:`~orchestrator.local.runner.LocalRunner` run with ``ORCH_ATTEMPT`` set (a
script sees ``TORCHELASTIC_RESTART_COUNT`` one higher, and a new MASTER_PORT is picked); after it,
``restarts/recovery.py`` records it in ``attempts.json`` and the ledger, and says whether to start the next
one, which resumes from the newest checkpoint like ``orch run --resume``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Protocol

from orchestrator.env.distenv import ATTEMPT_VAR
from orchestrator.local.result import LocalResult, read_result
from orchestrator.records.restarts.attempts import read_attempts
from orchestrator.restarts.protocol import in_step_restarts
from orchestrator.restarts.recovery import AttemptFacts, end_attempt
from orchestrator.spec.runconfig import RunConfig


class Runner(Protocol):
    def run(self) -> LocalResult: ...


def run_attempts(make_runner: Callable[[Mapping[str, str]], Runner], job_dir: Path, cfg: RunConfig, *,
                 out: IO[str] | None = None, clock: Callable[[], float] = time.time) -> LocalResult:
    """Run the ranks (``make_runner(extra_env)``: a fresh runner per attempt, with a new port) until an
    attempt completes, stops for good, or the restarts are used up."""
    batch_started = clock()
    attempt = 0
    while True:
        started = clock()
        result = make_runner({ATTEMPT_VAR: str(attempt)}).run()
        # the agents' in-process restarts of this step (launcher.restart: in-process) were attempts too
        attempt += in_step_restarts(read_attempts(job_dir), job="local", requeue=cfg.restarts, base=attempt)
        facts = AttemptFacts(attempt=attempt, requeue=cfg.restarts, exit_code=result.exit_code, started=started,
                             batch_started=batch_started, interrupted=result.status == "interrupted", run="local",
                             seen=result.seen)
        decision = end_attempt(job_dir, cfg, facts)
        if not decision.restart:
            result.result = read_result(job_dir)
            if decision.message and result.status == "failed" and attempt > 0:
                result.message = f"{result.message}; {decision.message}"
            return result
        if out is not None:
            where = f" (rank {decision.blamed_rank})" if decision.blamed_rank is not None else ""
            print(f"orch: attempt {attempt} {decision.kind}{where}: {result.message}; restarting from the newest "
                  f"checkpoint (attempt {attempt + 1} of at most {cfg.launcher.max_restarts + 1})", file=out,
                  flush=True)
        attempt += 1
