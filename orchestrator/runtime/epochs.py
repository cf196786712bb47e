"""An epoch's two ends: where it starts (mid-epoch after a resume: the step, the time spent, the tally and the
random state restored) and what it measured (the ranks' sums reduced, the test set evaluated)."""

from __future__ import annotations

import time

from orchestrator.runtime.checkpoint import restore_rng
from orchestrator.runtime.data import eval_shard
from orchestrator.runtime.dist import Dist, sum_floats
from orchestrator.runtime.loop import evaluate
from orchestrator.runtime.measures import Tally, means
from orchestrator.runtime.metrics import EpochMetrics
from orchestrator.runtime.setup import Parts
from orchestrator.runtime.state import Resume
from orchestrator.spec.job import TrainParams


def epoch_start(ctx: Dist, parts: Parts, epoch: int, resume: Resume | None) -> tuple[int, float, Tally]:
    """The step to start at, the seconds already spent and the tally (restored mid-epoch)."""
    tally = Tally.zeros(ctx.device, list(parts.metrics))
    if resume is None or epoch != resume.epoch:
        return 0, 0.0, tally
    mine = resume.mine(ctx.rank, ctx.world_size)
    restore_rng(mine.rng, ctx.device)
    if resume.step == 0:
        return 0, 0.0, tally
    if mine.tally is not None:
        tally.restore(mine.tally)
    return resume.step, resume.seconds, tally


def epoch_metrics(p: TrainParams, ctx: Dist, parts: Parts, epoch: int, tally: Tally, spent: float,
                  began: float) -> EpochMetrics:
    """The epoch's metrics, the same on every rank: the train tally summed over the ranks, the test set's
    (each rank evaluates its shard). ``spent``: seconds of this epoch before a resume; ``began``: perf_counter."""
    names = list(parts.metrics)
    summed = sum_floats(tally.values(), ctx)
    count, skipped = summed[len(names) + 1], tally.skipped  # every rank skips the same steps
    train_seconds = spent + time.perf_counter() - began
    values = means(names, summed, "train")
    if parts.test is not None:
        shard = eval_shard(len(parts.test), ctx.rank, ctx.world_size).tolist()
        test_sums = evaluate(parts.ddp.module, parts.test.eval_batches(shard), loss_fn=parts.task.loss_fn,
                             metrics=parts.metrics, ctx=ctx, autocast_dtype=parts.amp_dtype)
        values.update(means(names, test_sums, "test"))
    else:
        values.update({"test_loss": None, **{f"test_{n}": None for n in names}})
    return EpochMetrics(epoch=epoch + 1, epochs=p.epochs, values=values, names=tuple(names),
                        samples_per_s=count / train_seconds if train_seconds else 0.0,
                        seconds=spent + time.perf_counter() - began, world_size=ctx.world_size,
                        train_samples=int(count), steps=parts.num_steps, skipped_steps=int(skipped))
