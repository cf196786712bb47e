"""cifar10: the small CNN of the PyTorch CIFAR-10 tutorial (conv 3-6-16, fc 120-84-10).

Data: ``<data_dir>/cifar-10-batches-py/`` (the python version of CIFAR-10, unpacked), decoded once
into tensors normalized to [-1, 1] as in the tutorial. With ``augment=true`` (the default) the
training set is a ``torch.utils.data.Dataset`` that random-crops (4 pixels of padding) and flips each
image in the DataLoader workers (``num_workers``); the test set stays in memory (the fast path).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from orchestrator import JobSpec, Resources, TrainParams

if TYPE_CHECKING:
    from torch import nn

    from orchestrator import BuildContext, TrainTask


class Cifar10Params(TrainParams):
    epochs: int = Field(default=10, ge=1)
    batch_size: int = Field(default=32, ge=1, description="per rank")
    lr: float = Field(default=0.01, gt=0)
    momentum: float = Field(default=0.9, ge=0)
    augment: bool = Field(default=True, description="random crop + horizontal flip in DataLoader workers")


def make_model() -> nn.Module:
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(3, 6, kernel_size=5), nn.ReLU(), nn.MaxPool2d(2),  # 6 x 14 x 14
        nn.Conv2d(6, 16, kernel_size=5), nn.ReLU(), nn.MaxPool2d(2),  # 16 x 5 x 5
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
        nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, 10),
    )


def build(params: Cifar10Params, ctx: BuildContext) -> TrainTask:
    from jobs._datasets import Augmented, load_cifar10
    from orchestrator import TrainTask

    train, test = load_cifar10(ctx.require_data_dir("CIFAR-10"))
    return TrainTask(model=make_model(), train_set=Augmented(train) if params.augment else train, test_set=test)


SPEC = JobSpec(
    name="cifar10",
    params=Cifar10Params,
    build=build,
    resources=Resources(nodes=1, gpus=1, time="01:00:00"),
    description="the CIFAR-10 tutorial CNN (needs cifar-10-batches-py: --data-dir or ORCH_DATA_DIR)",
    needs_data=True,
)
