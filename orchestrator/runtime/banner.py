"""What rank 0 says as training starts: the job, the world, the data, the steps, and where it resumes."""

from __future__ import annotations

from pathlib import Path

import torch

from orchestrator.runtime.dist import Dist
from orchestrator.runtime.setup import Parts
from orchestrator.runtime.sources import TensorSource
from orchestrator.runtime.state import Resume
from orchestrator.spec.job import TrainParams
from orchestrator.spec.runconfig import RunConfig


def banner(job: str, cfg: RunConfig, p: TrainParams, ctx: Dist, parts: Parts, resume: Resume | None,
           job_dir: Path) -> list[str]:
    """The lines rank 0 prints before the first epoch (``orch: ...``)."""
    n_test = len(parts.test) if parts.test is not None else 0
    data = "in memory" if isinstance(parts.train, TensorSource) else \
        f"DataLoader, {parts.workers} worker(s) per rank"
    lines = [f"orch: job {job} | world size {ctx.world_size} ({cfg.nodes} node(s) x "
             f"{cfg.tasks_per_node}) | batch {p.batch_size} per rank, "
             f"{p.batch_size * ctx.world_size} global | {ctx.choice.describe()}, "
             f"{torch.get_num_threads()} thread(s) per rank"]
    accum = f" | grad_accum {p.grad_accum}" if p.grad_accum > 1 else ""
    lines.append(f"orch: {len(parts.train)} train / {n_test} test samples ({data}) | {parts.num_steps} steps per "
                 f"epoch{accum} | {p.epochs} epoch(s) | metrics: loss{''.join(', ' + n for n in parts.metrics)} | "
                 f"job folder {job_dir}")
    if resume is None:
        return lines
    if resume.epoch < p.epochs:
        lines.append(f"orch: resuming from checkpoint at epoch {resume.epoch + 1}, step {resume.step}")
    else:
        lines.append(f"orch: resuming from checkpoint after epoch {resume.epoch}: all {p.epochs} epoch(s) are done "
                     "(resume with epochs=N to train longer)")
    return lines
