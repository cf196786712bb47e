"""mnist: LeNet-5 (as in the classic MNIST DDP example) on 28x28 digits, padding 2 on conv1.

Data: ``<data_dir>/MNIST/raw/`` with the four IDX files (``.gz`` or uncompressed), decoded once
into normalized tensors; ``orch run mnist --download`` fetches them first when they are missing
(torchvision's download, ``$ORCH_MNIST_MIRROR`` for another mirror).
With the defaults, 2 ranks reach about 99% test accuracy in 3 epochs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from orchestrator import JobSpec, Resources, TrainParams

if TYPE_CHECKING:
    from pathlib import Path

    from torch import nn

    from orchestrator import BuildContext, TrainTask


class MnistParams(TrainParams):
    epochs: int = Field(default=3, ge=1)
    batch_size: int = Field(default=64, ge=1, description="per rank")
    lr: float = Field(default=0.05, gt=0)
    momentum: float = Field(default=0.9, ge=0)


def make_model() -> nn.Module:
    """LeNet-5 for 28x28 inputs (conv1 pads by 2, as the original's 32x32 input)."""
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.ReLU(), nn.MaxPool2d(2),  # 6 x 14 x 14
        nn.Conv2d(6, 16, kernel_size=5), nn.ReLU(), nn.MaxPool2d(2),  # 16 x 5 x 5
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
        nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, 10),
    )


def build(params: MnistParams, ctx: BuildContext) -> TrainTask:
    from jobs._datasets import load_mnist
    from orchestrator import TrainTask

    train, test = load_mnist(ctx.require_data_dir("MNIST"))
    return TrainTask(model=make_model(), train_set=train, test_set=test)


def download(data_dir: Path) -> None:
    from jobs._datasets import download_mnist

    download_mnist(data_dir)


SPEC = JobSpec(
    name="mnist",
    params=MnistParams,
    build=build,
    resources=Resources(nodes=1, gpus=1, time="00:30:00"),
    description="LeNet-5 on MNIST (needs the MNIST files: --data-dir or ORCH_DATA_DIR; --download gets them)",
    needs_data=True,
    download=download,
)
