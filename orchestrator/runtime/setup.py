"""Set-up of one rank's training: the job's task, placed and wrapped, and its data sources.

``set_up`` returns the ``Parts`` the loop needs (DDP model, optimizer, scaler, stepper, sampler,
sources, metrics); ``resume`` has already been read, so the weights and optimizer state are loaded
before DDP broadcasts rank 0's parameters and before the first (bucket-settling) pass.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DistributedSampler

from orchestrator.errors import ConfigError
from orchestrator.runtime.data import batch_len
from orchestrator.runtime.dist import Dist
from orchestrator.runtime.loop import Stepper, settle_buckets, steps_per_epoch
from orchestrator.runtime.measures import TrainingError, check_batch, task_metrics
from orchestrator.runtime.schedule import make_schedule
from orchestrator.runtime.sources import LoaderSource, TensorSource, check_dataset, default_workers, make_source
from orchestrator.runtime.state import Resume
from orchestrator.runtime.task import BuildContext, MetricFn, TrainTask
from orchestrator.spec.job import JobSpec, TrainParams

log = logging.getLogger(__name__)


@dataclass
class Parts:
    task: TrainTask
    ddp: DistributedDataParallel
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler | None
    stepper: Stepper
    sampler: DistributedSampler[Any]
    train: TensorSource | LoaderSource
    test: TensorSource | LoaderSource | None
    metrics: dict[str, MetricFn]
    num_steps: int  # micro-batches per epoch and rank
    amp_dtype: torch.dtype | None
    workers: int


def build_task(spec: JobSpec, params: TrainParams, ctx: Dist, data_dir: Path | None, job_dir: Path) -> TrainTask:
    """The job's ``build`` with every RNG seeded from ``params.seed`` (the same model on every rank)."""
    torch.manual_seed(params.seed)
    random.seed(params.seed)
    np.random.seed(params.seed % 2**32)
    bctx = BuildContext(data_dir=data_dir, job_dir=job_dir, rank=ctx.rank, local_rank=ctx.local_rank,
                        world_size=ctx.world_size, device=ctx.device)
    task = spec.build(params, bctx)
    if not isinstance(task, TrainTask):
        raise ConfigError(f"job {spec.name}: build() returned {type(task).__name__}, not a TrainTask",
                          hint="return orchestrator.runtime.task.TrainTask(model=..., train_set=...)")
    check_dataset(task.train_set, "train_set", spec.name)
    if task.test_set is not None:
        check_dataset(task.test_set, "test_set", spec.name)
    return task


def workers_for(p: TrainParams, cpus_per_task: int, job: str, say: Any) -> int:
    workers = default_workers(p.num_workers, cpus_per_task)
    if workers > cpus_per_task:
        say(f"orch: warning: job {job}: num_workers={workers} DataLoader workers per rank, but the task has "
            f"{cpus_per_task} CPU(s): the workers compete with training for them (set num_workers <= "
            f"{cpus_per_task}, or ask for more CPUs per task)")
    return workers


def set_up(task: TrainTask, p: TrainParams, ctx: Dist, *, job: str, cpus_per_task: int, resume: Resume | None,
           say: Any) -> Parts:
    cuda = ctx.device.type == "cuda"
    channels_last = p.channels_last and cuda
    model = task.model.to(ctx.device)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    if resume is not None:
        model.load_state_dict(resume.model)
    workers = workers_for(p, cpus_per_task, job, say)

    def source(dataset: Any) -> TensorSource | LoaderSource:
        return make_source(dataset, ctx.device, batch_size=p.batch_size, eval_batch_size=p.eval_batch_size,
                           num_workers=workers, seed=p.seed, rank=ctx.rank, channels_last=channels_last)

    train = source(task.train_set)
    test = source(task.test_set) if task.test_set is not None else None
    for src, evaluation in ((train, False), (test, True)):
        if isinstance(src, LoaderSource):
            src.start_workers(evaluation=evaluation)  # before any other thread of the training runs
    # gradient_as_bucket_view: gradients live in DDP's all-reduce buckets (no copy in and out)
    ddp = DistributedDataParallel(model, device_ids=[ctx.device.index] if cuda else None,
                                  gradient_as_bucket_view=True)
    optimizer = task.make_optimizer(ddp.parameters(), p)
    amp_dtype = None
    scaler = None
    if p.amp and cuda:
        amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        scaler = torch.amp.GradScaler("cuda") if amp_dtype == torch.float16 else None
    # drop_last=False: the sampler pads the shuffled list by repeating its first samples until
    # it divides by the world size, so every rank gets ceil(N / world) indices and the ranks
    # take the same number of steps. Training metrics skip the padding (Tally, real_count); the
    # evaluation does not use the sampler at all but an exact shard per rank (eval_shard).
    sampler: DistributedSampler[Any] = DistributedSampler(
        range(len(train)),  # type: ignore[arg-type]  # only its length is used
        num_replicas=ctx.world_size, rank=ctx.rank, shuffle=True, seed=p.seed, drop_last=False)
    num_steps = steps_per_epoch(len(sampler), p.batch_size, p.max_steps_per_epoch)
    schedule = make_schedule(p.lr_schedule, epochs=p.epochs, steps_per_epoch=-(-num_steps // p.grad_accum),
                             warmup=p.warmup_steps, step_epochs=p.lr_step_epochs, gamma=p.lr_gamma, lr=p.lr,
                             lr_min=p.lr_min)
    stepper = Stepper(ddp, optimizer, task.loss_fn, amp_dtype, scaler, ctx.device.type, schedule)
    if resume is not None:
        optimizer.load_state_dict(dict(resume.optimizer))
        if scaler is not None and resume.scaler:
            scaler.load_state_dict(dict(resume.scaler))
    # fresh or resumed, every counted step reduces its gradients in the same bucket layout
    first = first_batch(train, p.batch_size, job)
    loss, outputs = settle_buckets(stepper, first)
    metrics = task_metrics(task.metrics, outputs, first[1])
    with torch.no_grad():
        check_batch(job, "the first batch (before training)", loss, outputs, first[1], metrics)
    return Parts(task=task, ddp=ddp, optimizer=optimizer, scaler=scaler, stepper=stepper, sampler=sampler,
                 train=train, test=test, metrics=metrics, num_steps=num_steps, amp_dtype=amp_dtype, workers=workers)


def first_batch(train: TensorSource | LoaderSource, batch_size: int, job: str) -> tuple[Any, Any]:
    """The first ``batch_size`` samples of the set, as a batch on the device (for set-up checks)."""
    count = min(batch_size, len(train))
    try:
        batch = train.first_batch(count) if isinstance(train, LoaderSource) else \
            next(iter(train.batches(range(count), epoch=0, start_step=0)))
        batch_len(batch[1])
    except (ConfigError, TrainingError):
        raise
    except Exception as exc:
        text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        raise TrainingError(f"job {job}: the first batch of train_set cannot be made: {type(exc).__name__}: {text}",
                            hint="train_set[i] must return (input, target) of the same shapes for every i; "
                                 "tensors or tuples/dicts of tensors") from exc
    return batch
