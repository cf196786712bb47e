"""mnist_dataset: LeNet-5 on MNIST read through a per-sample Dataset (the DataLoader path, not TensorData).

Used by bench_train.py for the DataLoader row: the entrypoint with this Dataset and ``num_workers``
workers, against a plain DDP loop over a DataLoader on the very same Dataset. No test set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobs.mnist import MnistParams, make_model
from orchestrator import JobSpec, Resources

if TYPE_CHECKING:
    from orchestrator import BuildContext, TrainTask


def dataset(data_dir: Any) -> Any:
    """MNIST's training images, one (image, label) per __getitem__, as a plain torch Dataset would."""
    from torch.utils.data import Dataset

    from jobs._datasets import load_mnist

    train, _ = load_mnist(data_dir)

    class PerSample(Dataset[Any]):
        def __len__(self) -> int:
            return len(train)

        def __getitem__(self, index: int) -> Any:
            return train.inputs[index], train.targets[index]

    return PerSample()


def build(params: MnistParams, ctx: BuildContext) -> TrainTask:
    from orchestrator import TrainTask

    return TrainTask(model=make_model(), train_set=dataset(ctx.require_data_dir("MNIST")))


SPEC = JobSpec(name="mnist_dataset", params=MnistParams, build=build, resources=Resources(nodes=1, gpus=1),
               needs_data=True, description="LeNet-5 on MNIST through a per-sample Dataset (for bench/)")
