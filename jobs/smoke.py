"""smoke: nn.Linear(10, 10) on seeded random data. Runs in seconds and needs no files.

The labels come from a fixed random "teacher" matrix (argmax of x @ W), so the task is learnable
and the accuracy means something. Every rank generates the same data from ``seed``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from orchestrator import JobSpec, Resources, TrainParams

if TYPE_CHECKING:
    from orchestrator import BuildContext, TrainTask


class SmokeParams(TrainParams):
    epochs: int = Field(default=2, ge=1)
    batch_size: int = Field(default=16, ge=1, description="per rank")
    lr: float = Field(default=0.05, gt=0)
    samples: int = Field(default=1024, ge=1, description="training samples")
    test_samples: int = Field(default=256, ge=0, description="test samples (0: no evaluation)")


def build(params: SmokeParams, ctx: BuildContext) -> TrainTask:
    import torch
    from torch import nn

    from orchestrator import TensorData, TrainTask

    gen = torch.Generator().manual_seed(params.seed)
    teacher = torch.randn(10, 10, generator=gen)

    def split(n: int) -> TensorData:
        inputs = torch.randn(n, 10, generator=gen)
        return TensorData(inputs, (inputs @ teacher).argmax(dim=1))

    train = split(params.samples)
    test = split(params.test_samples) if params.test_samples else None
    return TrainTask(model=nn.Linear(10, 10), train_set=train, test_set=test)


SPEC = JobSpec(
    name="smoke",
    params=SmokeParams,
    build=build,
    resources=Resources(nodes=1, gpus=1, time="00:10:00"),
    description="nn.Linear(10, 10) on seeded random data; seconds, no files",
)
