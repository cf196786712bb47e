"""first_step: the smoke job, stamping the wall-clock time of each rank's first training step.

Used by bench_submit_latency.py: ``<job folder>/first_step/rank<R>`` holds ``time.time()`` at the
moment rank R's model runs its first forward pass (a forward pre-hook; training comes first).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from jobs.smoke import SmokeParams
from jobs.smoke import build as smoke_build
from orchestrator import JobSpec, Resources

if TYPE_CHECKING:
    from orchestrator import BuildContext, TrainTask


def build(params: SmokeParams, ctx: BuildContext) -> TrainTask:
    task = smoke_build(params, ctx)
    folder = ctx.job_dir / "first_step"
    folder.mkdir(exist_ok=True)
    marker = folder / f"rank{ctx.rank}"

    def stamp(module: Any, inputs: Any) -> None:
        if not marker.exists():
            marker.write_text(repr(time.time()), encoding="utf-8")

    task.model.register_forward_pre_hook(stamp)
    return task


SPEC = JobSpec(name="first_step", params=SmokeParams, build=build, resources=Resources(nodes=1, gpus=1),
               description="smoke, stamping each rank's first training step (for bench/)")
