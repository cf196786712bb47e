"""Test job (hostile values): numbers that are not numbers where a finite training loss hides them.

``nan_in`` picks where a NaN appears (training-mode forward passes counted from 0 in this process; the
first one is the runtime's bucket-settling pass, so ``nan_from`` of 1 makes every counted step NaN):

- ``none``: a plain run;
- ``eval``: the model's output is NaN in evaluation only (the training loss stays finite);
- ``metric``: the task's metric returns NaN on test batches only (the losses stay finite);
- ``metric_inf``: the same with +inf;
- ``train``: training outputs are NaN from the ``nan_from``-th forward pass on (use with
  ``on_nonfinite=skip``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from orchestrator import JobSpec, Resources, TrainParams

if TYPE_CHECKING:
    from orchestrator import BuildContext, TrainTask


class NonFiniteParams(TrainParams):
    batch_size: int = 16
    lr: float = 0.05
    samples: int = Field(default=128, ge=1)
    test_samples: int = Field(default=32, ge=0)
    nan_in: Literal["none", "eval", "metric", "metric_inf", "train"] = "none"
    nan_from: int = 1


def build(params: NonFiniteParams, ctx: BuildContext) -> TrainTask:
    import torch
    from torch import nn

    from orchestrator import TensorData, TrainTask

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(4, 2)
            self.calls = 0

        def forward(self, inputs: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.linear(inputs)
            if self.training:
                step, self.calls = self.calls, self.calls + 1
                if params.nan_in == "train" and step >= params.nan_from:
                    return out * float("nan")
            elif params.nan_in == "eval":
                return out * float("nan")
            return out

    model = Model()

    def score(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        correct = (outputs.argmax(dim=1) == targets).sum().to(torch.float64)
        if params.nan_in == "metric" and not model.training:
            return correct * float("nan")
        if params.nan_in == "metric_inf" and not model.training:
            return correct + float("inf")
        return correct

    gen = torch.Generator().manual_seed(params.seed)
    inputs = torch.randn(params.samples + params.test_samples, 4, generator=gen)
    targets = (inputs[:, 0] > 0).long()
    n = params.samples
    test = TensorData(inputs[n:], targets[n:]) if params.test_samples else None
    return TrainTask(model=model, train_set=TensorData(inputs[:n], targets[:n]), test_set=test,
                     metrics={"score": score})


SPEC = JobSpec(
    name="nonfinite",
    params=NonFiniteParams,
    build=build,
    resources=Resources(nodes=1, gpus=0),
    description="test job: NaN/inf in evaluation or in every training step",
)
