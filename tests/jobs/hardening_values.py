"""Test job (hardening tests): string hyperparameters, so hostile override values reach job.json.

The hostile-value tests mostly render and execute the sbatch script with stub Slurm commands. When
a local run builds it, each rank writes ``probe-rank<R>.json`` into the job folder (the values it
received: ``tag``, ``note``, ``$ORCH_HOSTILE``, the data folder) and trains a tiny model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from orchestrator import JobSpec, Resources, TrainParams

if TYPE_CHECKING:
    from orchestrator import BuildContext, TrainTask


class ValueParams(TrainParams):
    tag: str = ""
    note: str = "-"
    samples: int = Field(default=64, ge=1)


def build(params: ValueParams, ctx: BuildContext) -> TrainTask:
    import json
    import os

    import torch
    from torch import nn

    from orchestrator import TensorData, TrainTask

    probe = {
        "tag": params.tag,
        "note": params.note,
        "env": os.environ.get("ORCH_HOSTILE"),
        "data_dir": str(ctx.data_dir) if ctx.data_dir else None,
        "job_dir": str(ctx.job_dir),
    }
    (ctx.job_dir / f"probe-rank{ctx.rank}.json").write_text(json.dumps(probe), encoding="utf-8")
    gen = torch.Generator().manual_seed(params.seed)
    inputs = torch.randn(params.samples, 4, generator=gen)
    return TrainTask(model=nn.Linear(4, 2), train_set=TensorData(inputs, (inputs[:, 0] > 0).long()))


SPEC = JobSpec(
    name="hardening_values",
    params=ValueParams,
    build=build,
    resources=Resources(nodes=1, gpus=2, time="00:30:00"),
)
