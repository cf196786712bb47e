"""The shared entrypoint: device, process group, job build, DDP, epochs, checkpoints, preemption.

``run(...)`` is what ``python -m orchestrator.launch`` calls in every task once the distributed
environment is derived and exported. A job file holds no distributed code: it only builds a
``TrainTask`` (model and tensors); everything here is the same for every job.
"""

from __future__ import annotations

import logging
import random
import socket
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DistributedSampler

from orchestrator.distenv import DistEnv
from orchestrator.errors import ConfigError
from orchestrator.job import JobSpec, TrainParams, load_job_file
from orchestrator.runconfig import CHECKPOINT_DIR, METRICS_FILE, REQUEUE_FILE, RESULT_FILE, RunConfig
from orchestrator.runtime import device as devices
from orchestrator.runtime.checkpoint import Checkpointer, CheckpointError, restore_rng
from orchestrator.runtime.data import eval_shard, real_count
from orchestrator.runtime.dist import (
    Dist,
    StopVote,
    check_sync,
    gather_objects,
    process_group,
    state_digest,
    sum_floats,
)
from orchestrator.runtime.identity import check_identity
from orchestrator.runtime.loop import Stepper, Tally, evaluate, settle_buckets, steps_per_epoch, train_epoch
from orchestrator.runtime.metrics import EpochMetrics, MetricsLog, ratio, write_json_atomic
from orchestrator.runtime.preempt import PreemptFlag
from orchestrator.runtime.task import BuildContext, TrainTask

log = logging.getLogger(__name__)


def run(cfg: RunConfig, env: DistEnv, job_dir: Path, flag: PreemptFlag, environ: Mapping[str, str]) -> int:
    """Train the job of ``cfg`` as rank ``env.rank``; returns the exit code (0 also after preemption)."""
    cuda = torch.cuda.is_available()
    choice = devices.select_device(
        cuda_available=cuda, device_count=torch.cuda.device_count() if cuda else 0,
        visible=environ.get(devices.VISIBLE_VAR), rank=env.rank, local_rank=env.local_rank,
        local_world_size=env.local_world_size)
    spec = load_job_file(Path(cfg.job_file))
    params = spec.params.model_validate(cfg.params)
    torch.set_num_threads(devices.num_threads(params.num_threads, cfg.cpus_per_task))
    with process_group(rank=env.rank, world_size=env.world_size, local_rank=env.local_rank,
                       master_addr=env.master_addr, master_port=env.master_port, choice=choice,
                       timeout=cfg.launcher.init_timeout,
                       collective_timeout=cfg.launcher.collective_timeout) as ctx:
        if choice.kind == "cuda":
            host = devices.host_name(environ, socket.gethostname())
            devices.check_unique_devices(gather_objects((host, choice.physical), ctx))
        data_dir = cfg.data_dir  # resolved at submit/run time ($ORCH_DATA_DIR is read there, not here)
        trainer = Trainer(cfg=cfg, spec=spec, params=params, ctx=ctx, job_dir=job_dir, flag=flag,
                          data_dir=Path(data_dir).expanduser() if data_dir else None)
        return trainer.run()


@dataclass
class Trainer:
    cfg: RunConfig
    spec: JobSpec
    params: TrainParams
    ctx: Dist
    job_dir: Path
    flag: PreemptFlag
    data_dir: Path | None

    def say(self, text: str) -> None:
        """A line for people, from rank 0 only."""
        if self.ctx.is_main:
            print(text, flush=True)

    def run(self) -> int:
        p, ctx = self.params, self.ctx
        cuda = ctx.device.type == "cuda"
        for name in ("amp", "channels_last"):
            if getattr(p, name) and not cuda:
                self.say(f"orch: {name}=true only applies on CUDA; ignored on CPU")
        channels_last = p.channels_last and cuda
        task = self._build()
        model = task.model.to(ctx.device)
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
        train = task.train_set.to(ctx.device, channels_last=channels_last)
        test = (task.test_set.to(ctx.device, channels_last=channels_last)
                if task.test_set is not None else None)

        checkpointer = Checkpointer(self.job_dir / CHECKPOINT_DIR, ctx)
        state = checkpointer.resume()
        epoch0, step0 = (int(state["epoch"]), int(state["step"])) if state else (0, 0)
        if state is not None:
            check_identity(state, job_name=self.spec.name, model=model)
            self._check_resumable(state)
            model.load_state_dict(state["model"])
        # gradient_as_bucket_view: gradients live in DDP's all-reduce buckets (no copy in and out)
        ddp = DistributedDataParallel(model, device_ids=[ctx.device.index] if cuda else None,
                                      gradient_as_bucket_view=True)
        optimizer = task.make_optimizer(ddp.parameters(), p)
        amp_dtype = None
        scaler = None
        if p.amp and cuda:
            amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
            scaler = torch.amp.GradScaler("cuda") if amp_dtype == torch.float16 else None
        if state is not None:
            optimizer.load_state_dict(state["optimizer"])
            if scaler is not None and state.get("scaler"):
                scaler.load_state_dict(state["scaler"])
        stepper = Stepper(ddp, optimizer, task.loss_fn, amp_dtype, scaler, ctx.device.type)
        # fresh or resumed, every counted step reduces its gradients in the same bucket layout
        settle_buckets(stepper, train, p.batch_size)

        # drop_last=False: the sampler pads the shuffled list by repeating its first samples until
        # it divides by the world size, so every rank gets ceil(N / world) indices and the ranks
        # take the same number of steps. Training metrics skip the padding (real_count); the
        # evaluation does not use the sampler at all but an exact shard per rank (eval_shard).
        sampler: DistributedSampler[tuple[torch.Tensor, torch.Tensor]] = DistributedSampler(
            train, num_replicas=ctx.world_size, rank=ctx.rank, shuffle=True, seed=p.seed, drop_last=False)
        per_rank = len(sampler)
        num_steps = steps_per_epoch(per_rank, p.batch_size, p.max_steps_per_epoch)
        metrics_log = MetricsLog(self.job_dir / METRICS_FILE)
        if ctx.is_main:
            (self.job_dir / REQUEUE_FILE).unlink(missing_ok=True)
            metrics_log.trim(epoch0)
        self._banner(len(train), len(test) if test is not None else 0, num_steps, state)

        vote = StopVote(self.flag, ctx)
        last: EpochMetrics | None = None
        synced = False

        def after_step(step: int) -> None:
            nonlocal synced
            if p.check_sync and not synced:
                check_sync(ddp.module, ctx, "after the first step")
                synced = True

        # Start-up is over: from here a collective that waits longer than launcher.collective_timeout
        # means a crashed, stuck or diverging rank (checkpoints switch back to the patient timeout).
        ctx.set_timeout(ctx.collective_timeout)
        for epoch in range(epoch0, p.epochs):
            sampler.set_epoch(epoch)
            order = torch.tensor(list(sampler), dtype=torch.long, device=ctx.device)
            real = real_count(len(train), ctx.rank, ctx.world_size)
            tally, spent, start = Tally.zeros(ctx.device), 0.0, 0
            if state is not None and epoch == epoch0:
                ranks = state["ranks"]
                mine = ranks[ctx.rank] if len(ranks) == ctx.world_size else ranks[0]
                restore_rng(mine["rng"], ctx.device)
                if step0 > 0:
                    start, spent = step0, float(state["partial_seconds"])
                    tally.loss_sum += mine["tally"][0]
                    tally.correct += int(mine["tally"][1])
                    tally.count = int(mine["tally"][2])
            began = time.perf_counter()
            step, stopped = train_epoch(stepper, train, order, real=real, batch_size=p.batch_size,
                                        start_step=start, num_steps=num_steps, vote=vote, tally=tally,
                                        after_step=after_step)
            if stopped:
                self._stop(checkpointer, ddp, optimizer, scaler, epoch, step, tally,
                           spent + time.perf_counter() - began)
                return 0
            loss_sum, correct, count = self._sum_tally(tally)
            train_seconds = spent + time.perf_counter() - began
            test_loss = test_acc = None
            if test is not None:
                test_loss, test_acc, _ = evaluate(
                    ddp.module, test, eval_shard(len(test), ctx.rank, ctx.world_size).to(ctx.device),
                    batch_size=p.eval_batch_size, loss_fn=task.loss_fn, ctx=ctx, autocast_dtype=amp_dtype)
            last = EpochMetrics(
                epoch=epoch + 1, epochs=p.epochs, train_loss=ratio(loss_sum, count),
                train_acc=ratio(correct, count),
                test_loss=test_loss, test_acc=test_acc, samples_per_s=ratio(count, train_seconds),
                seconds=spent + time.perf_counter() - began, world_size=ctx.world_size,
                train_samples=int(count), steps=num_steps)
            if ctx.is_main:
                print(last.line(), flush=True)
                metrics_log.append(last)
            if p.checkpoint:
                self._save(checkpointer, ddp, optimizer, scaler, epoch + 1, 0, None, 0.0)
        vote.drain()
        if p.check_sync:
            check_sync(ddp.module, ctx, "at the end of training")
        digests = gather_objects(state_digest(ddp.module), ctx)
        if ctx.is_main:
            self._write_result(last, metrics_log, digests)
        return 0

    # --- pieces ---------------------------------------------------------------------------------

    def _build(self) -> TrainTask:
        p, ctx = self.params, self.ctx
        torch.manual_seed(p.seed)
        random.seed(p.seed)
        np.random.seed(p.seed % 2**32)
        bctx = BuildContext(data_dir=self.data_dir, job_dir=self.job_dir, rank=ctx.rank,
                            local_rank=ctx.local_rank, world_size=ctx.world_size, device=ctx.device)
        task = self.spec.build(p, bctx)
        if not isinstance(task, TrainTask):
            raise ConfigError(f"job {self.spec.name}: build() returned {type(task).__name__}, "
                              "not a TrainTask",
                              hint="return orchestrator.runtime.task.TrainTask(model=..., train_set=...)")
        return task

    def _check_resumable(self, state: Mapping[str, Any]) -> None:
        if int(state["step"]) == 0:
            return
        saved = (int(state["world_size"]), int(state["batch_size"]))
        if saved != (self.ctx.world_size, self.params.batch_size):
            raise CheckpointError(
                f"the checkpoint stopped in the middle of epoch {int(state['epoch']) + 1} (step "
                f"{state['step']}) with world size {saved[0]} and batch size {saved[1]}; this run has "
                f"world size {self.ctx.world_size} and batch size {self.params.batch_size}",
                hint="resume with the same number of ranks and batch_size, or start a new job")

    def _banner(self, n_train: int, n_test: int, num_steps: int, state: Mapping[str, Any] | None) -> None:
        p, ctx = self.params, self.ctx
        self.say(f"orch: job {self.spec.name} | world size {ctx.world_size} ({self.cfg.nodes} node(s) x "
                 f"{self.cfg.tasks_per_node}) | batch {p.batch_size} per rank, "
                 f"{p.batch_size * ctx.world_size} global | {ctx.choice.describe()}, "
                 f"{torch.get_num_threads()} thread(s) per rank")
        self.say(f"orch: {n_train} train / {n_test} test samples | {num_steps} steps per epoch | "
                 f"{p.epochs} epoch(s) | job folder {self.job_dir}")
        if state is None:
            return
        epoch, step = int(state["epoch"]), int(state["step"])
        if epoch < p.epochs:
            self.say(f"orch: resuming from checkpoint at epoch {epoch + 1}, step {step}")
        else:
            self.say(f"orch: resuming from checkpoint after epoch {epoch}: all {p.epochs} epoch(s) are done "
                     "(resume with epochs=N to train longer)")

    def _sum_tally(self, tally: Tally) -> tuple[float, float, float]:
        loss_sum, correct, count = sum_floats([tally.loss_sum, tally.correct, float(tally.count)], self.ctx)
        return loss_sum, correct, count

    def _save(self, checkpointer: Checkpointer, ddp: DistributedDataParallel,
              optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler | None, epoch: int, step: int,
              tally: Tally | None, seconds: float) -> None:
        local = {"tally": (float(tally.loss_sum), int(tally.correct), tally.count) if tally else (0.0, 0, 0)}
        with self.ctx.patient():  # the other ranks wait at the barrier while rank 0 writes
            checkpointer.save({
                "model": ddp.module.state_dict(), "optimizer": optimizer.state_dict(),
                "scaler": scaler.state_dict() if scaler is not None else None,
                "epoch": epoch, "step": step, "partial_seconds": seconds,
                "world_size": self.ctx.world_size, "batch_size": self.params.batch_size,
                "params": self.params.model_dump(mode="json"), "job": self.spec.name,
            }, local)

    def _stop(self, checkpointer: Checkpointer, ddp: DistributedDataParallel,
              optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler | None, epoch: int, step: int,
              tally: Tally, seconds: float) -> None:
        self._save(checkpointer, ddp, optimizer, scaler, epoch, step, tally, seconds)
        if not self.ctx.is_main:
            return
        where = f"epoch {epoch + 1}, step {step}"
        if self.cfg.launcher.requeue:
            (self.job_dir / REQUEUE_FILE).write_text(f"{where}\n", encoding="utf-8")
            print(f"orch: preempted (SIG{self.flag.signal_name}); stopped at {where}; checkpoint saved; "
                  "requeue requested", flush=True)
        else:
            print(f"orch: preempted (SIG{self.flag.signal_name}); stopped at {where}; checkpoint saved; "
                  "launcher.requeue is false, so resubmit to continue", file=sys.stderr, flush=True)

    def _write_result(self, last: EpochMetrics | None, metrics_log: MetricsLog, digests: list[str]) -> None:
        final: dict[str, Any] | None = last.as_dict() if last is not None else None
        if final is None:
            entries = metrics_log.read()
            final = entries[-1] if entries else None
        write_json_atomic(self.job_dir / RESULT_FILE, {
            "job": self.spec.name, "status": "completed", "epochs": self.params.epochs,
            "world_size": self.ctx.world_size, "final": final, "param_digest": digests[0],
            "param_digests": digests, "in_sync": len(set(digests)) == 1,
        })
