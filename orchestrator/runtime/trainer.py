"""The training loop of the shared entrypoint: ``Trainer.run`` reads as the loop itself.

Set up (``runtime.setup``), resume (``runtime.state``), then per epoch train, evaluate, log and checkpoint;
a preemption signal stops every rank at the same step with a checkpoint (and a requeue asked for); the last
rank 0 writes is ``result.json``. ``runtime/entry.py`` makes the Trainer once the process group is up.
"""

from __future__ import annotations

import logging
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from orchestrator.errors import OrchError
from orchestrator.records.restarts.attempts import CHECKPOINT_STALL, CHECKPOINT_STALL_IN_TRAINING, CHECKPOINT_WRITE
from orchestrator.records.resumecheck import JobIdentity
from orchestrator.records.startup import CLOCK
from orchestrator.restarts.heartbeat import Heartbeat, NoBeat
from orchestrator.runtime.banner import banner
from orchestrator.runtime.checkpoint import Checkpointer
from orchestrator.runtime.data import real_count
from orchestrator.runtime.dist import (
    Dist,
    StopVote,
    check_sync,
    describe_failure,
    gather_objects,
    state_digest,
)
from orchestrator.runtime.epochs import epoch_metrics, epoch_start
from orchestrator.runtime.identity import check_identity
from orchestrator.runtime.loop import EpochPlan, decode_nonfinite, train_epoch
from orchestrator.runtime.measures import Tally, TrainingError
from orchestrator.runtime.metrics import EpochMetrics, MetricsLog, epoch_problem, write_json_atomic
from orchestrator.runtime.periodic import PeriodicClock
from orchestrator.runtime.progress import PROGRESS_FILE, Progress
from orchestrator.runtime.setup import Parts, build_task, set_up
from orchestrator.runtime.state import Resume, checkpoint_state
from orchestrator.runtime.task import TrainTask
from orchestrator.runtime.tracking import StepTracker, global_step, open_tracker
from orchestrator.spec.job import JobSpec, TrainParams
from orchestrator.spec.numbers import FULL_DISK, writing
from orchestrator.spec.runconfig import CHECKPOINT_DIR, METRICS_FILE, REQUEUE_FILE, RESULT_FILE, RunConfig
from orchestrator.task.outcome import RECORDER
from orchestrator.task.preempt import PreemptFlag

log = logging.getLogger(__name__)


def describe(exc: BaseException) -> str:
    """``Type: first line`` of an exception; for an error re-raised from a DataLoader worker
    ("Caught X in DataLoader worker process N." + the worker's traceback) also its last line."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[0][:300] if lines else ""
    if text.startswith("Caught ") and len(lines) > 1:
        text = f"{text.rstrip('.')}: {lines[-1][:300]}"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass
class Trainer:
    cfg: RunConfig
    spec: JobSpec
    params: TrainParams
    ctx: Dist
    job_dir: Path
    flag: PreemptFlag
    data_dir: Path | None
    periodic: PeriodicClock = field(default_factory=lambda: PeriodicClock(0.0))
    tracker: StepTracker = field(default_factory=lambda: StepTracker([], 1, 0))
    status: str = "failed"  # how the run ended, for the trackers: completed, preempted or failed
    checkpointer: Checkpointer | None = None
    beat: Heartbeat | NoBeat = field(default_factory=NoBeat)  # in-process restarts: its agent sees the rank step
    # the goodput ledger (result.json; resumed runs' included): the training thread's time in checkpoint saves,
    # and rank 0's time writing their files before this process (its own: checkpointer.write_s)
    checkpoint_stall_s: float = 0.0
    checkpoint_write_s: float = 0.0
    # the stall's part between two training steps (a save after this attempt's last step is outside its span):
    # a save's stall waits in stall_pending_s until the next step
    stall_in_training_s: float = 0.0
    stall_pending_s: float = 0.0

    @property
    def metrics_log(self) -> MetricsLog:
        """The job's ``metrics.jsonl`` (one owner of its path: run() appends, _save() makes it durable)."""
        return MetricsLog(self.job_dir / METRICS_FILE)

    def say(self, text: str) -> None:
        """A line for people, from rank 0 only."""
        if self.ctx.is_main:
            print(text, flush=True)

    def run(self) -> int:
        p, ctx = self.params, self.ctx
        for name in ("amp", "channels_last"):
            if getattr(p, name) and ctx.device.type != "cuda":
                self.say(f"orch: {name}=true only applies on CUDA; ignored on CPU")
        task = build_task(self.spec, p, ctx, self.data_dir, self.job_dir)
        self.checkpointer = checkpointer = Checkpointer(self.job_dir / CHECKPOINT_DIR, ctx, JobIdentity.of(self.cfg),
                                                        background=self.cfg.launcher.checkpoint_write == "async")
        resume = self._resume(checkpointer, task)
        CLOCK.lap("build")
        parts = set_up(task, p, ctx, job=self.spec.name, cpus_per_task=self.cfg.cpus_per_task, resume=resume,
                       say=self.say)
        CLOCK.lap("ddp")
        metrics_log = self.metrics_log
        if ctx.is_main:
            (self.job_dir / REQUEUE_FILE).unlink(missing_ok=True)
            metrics_log.trim(resume.epoch if resume else 0)
        for line in banner(self.spec.name, self.cfg, p, ctx, parts, resume, self.job_dir):
            self.say(line)
        # checkpoint_every: rank 0's clock decides, the vote tells every rank (runtime/periodic.py)
        self.periodic = PeriodicClock(p.checkpoint_every if p.checkpoint else 0.0)
        vote = StopVote(self.flag, ctx, due=self.periodic.due if ctx.is_main and self.periodic.every else None)
        progress = Progress(self.job_dir / PROGRESS_FILE, p.epochs, p.progress_every, ctx.world_size)
        self.tracker = self._open_tracker(parts, resume)
        last: EpochMetrics | None = None
        # Start-up is over: from here a collective that waits longer than launcher.collective_timeout
        # means a crashed, stuck or diverging rank (checkpoints switch back to the patient timeout).
        ctx.set_timeout(ctx.collective_timeout)
        for epoch in range(resume.epoch if resume else 0, p.epochs):
            began = time.perf_counter()
            start, spent, tally = epoch_start(ctx, parts, epoch, resume)

            def save_now(step: int, epoch: int = epoch, spent: float = spent, began: float = began,
                         tally: Tally = tally) -> None:
                self._save(checkpointer, parts, epoch, step, tally, spent + time.perf_counter() - began)
                self.say(f"orch: checkpoint at epoch {epoch + 1}, step {step} (checkpoint_every "
                         f"{p.checkpoint_every:g} s)")

            step, stopped = self._train(parts, epoch, start, tally, vote, progress, save_now)
            self.beat.rest()  # no training step is due until the next epoch's (evaluation, the checkpoint)
            if stopped:
                self._stop(checkpointer, parts, epoch, step, tally, spent + time.perf_counter() - began, vote)
                return 0
            last = epoch_metrics(p, ctx, parts, epoch, tally, spent, began)
            last = replace(last, global_step=global_step(epoch + 1, 0, parts.num_steps, p.grad_accum))
            if ctx.is_main:
                self.tracker.epoch(last, last.global_step or 0)
                print(last.line(), flush=True)
                metrics_log.append(last)
                progress.end_epoch(last.values.get("train_loss"), last.samples_per_s)
            # every rank sees the same reduced numbers, so every rank stops here together
            problem = epoch_problem(last, self.spec.name, -(-parts.num_steps // p.grad_accum))
            if problem is not None:
                raise TrainingError(problem[0], hint=problem[1])
            if p.checkpoint:
                self._save(checkpointer, parts, epoch + 1, 0, None, 0.0)
                vote.take_checkpoint()  # one due in the epoch's last vote: this checkpoint is it
        vote.drain()
        self.checkpoint_stall_s += checkpointer.finish()
        if p.check_sync:
            check_sync(parts.ddp.module, ctx, "at the end of training")
        digests = gather_objects(state_digest(parts.ddp.module), ctx)
        if ctx.is_main:
            metrics_log.sync()
            self._write_result(last, metrics_log, digests, checkpointer)
        self.status = "completed"
        return 0

    # --- pieces ---------------------------------------------------------------------------------

    def _open_tracker(self, parts: Parts, resume: Resume | None) -> StepTracker:
        p = self.params
        return open_tracker(
            self.job_dir, is_main=self.ctx.is_main, tracking=self.cfg.tracking, params=p.model_dump(mode="json"),
            log_every=p.log_every, total_opt_steps=global_step(p.epochs, 0, parts.num_steps, p.grad_accum),
            samples_per_step=p.batch_size * p.grad_accum * self.ctx.world_size, job_name=self.spec.name,
            resumed_at=global_step(resume.epoch, resume.step, parts.num_steps, p.grad_accum) if resume else None)

    def _resume(self, checkpointer: Checkpointer, task: TrainTask) -> Resume | None:
        state = checkpointer.resume()
        if state is None:
            return None
        check_identity(state, job_name=self.spec.name, model=task.model)
        resume = Resume.from_checkpoint(state)
        self.checkpoint_stall_s, self.checkpoint_write_s = resume.checkpoint_stall_s, resume.checkpoint_write_s
        self.stall_in_training_s = resume.stall_in_training_s
        resume.check(world_size=self.ctx.world_size, batch_size=self.params.batch_size,
                     grad_accum=self.params.grad_accum)
        return resume

    def _train(self, parts: Parts, epoch: int, start: int, tally: Tally, vote: StopVote,
               progress: Progress, checkpoint: Callable[[int], None]) -> tuple[int, bool]:
        p, ctx = self.params, self.ctx
        parts.sampler.set_epoch(epoch)
        order = list(parts.sampler)
        plan = EpochPlan(epoch=epoch, num_steps=parts.num_steps, batch_size=p.batch_size,
                         real=real_count(len(parts.train), ctx.rank, ctx.world_size), grad_accum=p.grad_accum,
                         skip_nonfinite=p.on_nonfinite == "skip")
        if ctx.is_main:
            progress.start_epoch(epoch, parts.num_steps, start)
        synced = not p.check_sync
        current = start  # the step running now (for error messages)
        tracker = self.tracker
        if tracker.active:
            tracker.begin(global_step(epoch, start, plan.num_steps, p.grad_accum), float(tally.loss_sum), tally.count)

        def running_loss() -> float | None:
            return float(tally.loss_sum) / tally.count if tally.count else None

        def after_step(step: int) -> None:
            nonlocal synced, current
            current = step
            RECORDER.step(epoch + 1, step)  # in memory: the outcome record's "last step"
            self.stall_in_training_s += self.stall_pending_s  # a save between two steps of this attempt
            self.stall_pending_s = 0.0
            self.beat.tick()  # in-process restarts: its agent sees the rank step (restarts/heartbeat.py)
            if "first_step" not in CLOCK.phases:
                CLOCK.lap("first_step")
            if not synced and (step % p.grad_accum == 0 or step == plan.num_steps):  # after an optimizer step
                check_sync(parts.ddp.module, ctx, "after the first step")
                synced = True
            if tracker.active and (step % p.grad_accum == 0 or step == plan.num_steps):
                done = global_step(epoch, step, plan.num_steps, p.grad_accum)
                if tracker.due(done):
                    tracker.point(done, loss_sum=lambda: float(tally.loss_sum), count=tally.count,
                                  lr=parts.optimizer.param_groups[0]["lr"], model=parts.ddp.module)
            if ctx.is_main:
                samples = min(step * p.batch_size, plan.real) - min(start * p.batch_size, plan.real)
                line = progress.step(step, samples, running_loss)
                if line is not None:
                    print(line, flush=True)

        batches = parts.train.batches(order[:parts.num_steps * p.batch_size], epoch=epoch, start_step=start)
        try:
            return train_epoch(parts.stepper, batches, plan, start_step=start, vote=vote, tally=tally,
                               metrics=parts.metrics, ctx=ctx, after_step=after_step, checkpoint=checkpoint)
        except (OrchError, KeyboardInterrupt):
            raise
        except Exception as exc:
            if describe_failure(exc, ctx.collective_timeout) is not None or (
                    isinstance(exc, OSError) and exc.errno in FULL_DISK):
                raise  # a collective failed (another rank's problem), a full disk: said by launch
            traceback.print_exc(file=sys.stderr)
            raise TrainingError(f"rank {ctx.rank} failed: {describe(exc)} (job {self.spec.name}, epoch {epoch + 1}, "
                                f"step {current})",
                                hint="the traceback above shows where (the job's model, data set, loss or "
                                     "metrics)") from None
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                close()

    def _save(self, checkpointer: Checkpointer, parts: Parts, epoch: int, step: int, tally: Tally | None,
              seconds: float) -> None:
        p = self.params
        began = time.monotonic()
        self.beat.rest()  # a checkpoint is no training step (the next step ticks again)
        with self.ctx.patient():  # the other ranks wait at the barrier while rank 0 writes (or copies)
            if self.ctx.is_main:
                self.metrics_log.sync()  # the epochs this checkpoint claims are on disk
                checkpointer.wait()  # the previous save is on disk: its write time counts in this one
            state = checkpoint_state(
                model=parts.ddp.module.state_dict(), optimizer=parts.optimizer.state_dict(),
                scaler=parts.scaler.state_dict() if parts.scaler is not None else None, epoch=epoch, step=step,
                seconds=seconds, world_size=self.ctx.world_size, batch_size=p.batch_size, grad_accum=p.grad_accum,
                params=p.model_dump(mode="json"), job=self.spec.name, stall_s=self.checkpoint_stall_s,
                write_s=self.checkpoint_write_s + checkpointer.write_s, stall_in_training_s=self.stall_in_training_s)
            checkpointer.save(state, {"tally": tally.saved() if tally is not None else None})
        stalled = time.monotonic() - began
        self.checkpoint_stall_s += stalled
        self.stall_pending_s += stalled
        self.periodic.reset()

    def _stop(self, checkpointer: Checkpointer, parts: Parts, epoch: int, step: int, tally: Tally, seconds: float,
              vote: StopVote) -> None:
        if vote.problem:
            bad = decode_nonfinite(vote.problem, epoch)
            raise TrainingError(
                f"job {self.spec.name}: non-finite loss (NaN or inf) on rank {bad.rank} at epoch {epoch + 1}, "
                f"step {bad.step}; every rank stopped, no checkpoint was written for it",
                hint="lower lr, check the data and the loss (or set on_nonfinite=skip to skip such steps; resume "
                     "continues from the last checkpoint)")
        self._save(checkpointer, parts, epoch, step, tally, seconds)
        self.checkpoint_stall_s += checkpointer.finish()  # on disk before the requeue is asked for
        self.status = "preempted"
        if not self.ctx.is_main:
            return
        where = f"epoch {epoch + 1}, step {step}"
        if self.cfg.launcher.requeue:
            with writing(self.job_dir / REQUEUE_FILE):
                (self.job_dir / REQUEUE_FILE).write_text(f"{where}\n", encoding="utf-8")
            print(f"orch: preempted (SIG{self.flag.signal_name}); stopped at {where}; checkpoint saved; "
                  "requeue requested", flush=True)
        else:
            print(f"orch: preempted (SIG{self.flag.signal_name}); stopped at {where}; checkpoint saved; "
                  "launcher.requeue is false, so resubmit to continue", file=sys.stderr, flush=True)

    def _write_result(self, last: EpochMetrics | None, metrics_log: MetricsLog, digests: list[str],
                      checkpointer: Checkpointer) -> None:
        final: dict[str, Any] | None = last.as_dict() if last is not None else None
        if final is None:
            entries = metrics_log.read()
            final = entries[-1] if entries else None
        write_json_atomic(self.job_dir / RESULT_FILE, {
            "job": self.spec.name, "status": "completed", "epochs": self.params.epochs,
            "world_size": self.ctx.world_size, "final": final, "param_digest": digests[0],
            "param_digests": digests, "in_sync": len(set(digests)) == 1, "startup": CLOCK.as_dict(),
            CHECKPOINT_STALL: round(self.checkpoint_stall_s, 3),
            CHECKPOINT_STALL_IN_TRAINING: round(self.stall_in_training_s, 3),
            CHECKPOINT_WRITE: round(self.checkpoint_write_s + checkpointer.write_s, 3),
        })
