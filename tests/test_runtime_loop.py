"""settle_buckets: DDP's bucket layout is the same for every counted step, and nothing else changes.

A resumed process builds a new DDP model. DDP reduces the first backward after construction in one
bucket in parameter order and rebuilds its buckets (gradient-ready order) at the next forward; with
3+ ranks the layout changes the bits of the all-reduced gradients. The layout is visible here as the
addresses of the gradients (views into the buckets: gradient_as_bucket_view=True).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from orchestrator.local import free_port
from orchestrator.runtime.data import TensorData
from orchestrator.runtime.device import CPU
from orchestrator.runtime.dist import Dist, process_group
from orchestrator.runtime.loop import Stepper, settle_buckets
from orchestrator.runtime.task import default_loss


@pytest.fixture(scope="module")
def single_rank() -> Iterator[Dist]:
    with process_group(rank=0, world_size=1, local_rank=0, master_addr="127.0.0.1", master_port=free_port(),
                       choice=CPU, timeout=30, collective_timeout=30) as ctx:
        yield ctx


def make_stepper() -> tuple[Stepper, TensorData]:
    torch.manual_seed(0)
    # BatchNorm (buffers that a training forward updates) and Dropout (draws random numbers)
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Dropout(0.5), nn.ReLU(), nn.Linear(8, 3))
    ddp = DistributedDataParallel(model, gradient_as_bucket_view=True)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    data = TensorData(torch.randn(32, 6), torch.randint(0, 3, (32,)))
    return Stepper(ddp, optimizer, default_loss), data


def grad_layout(stepper: Stepper) -> list[int]:
    return [p.grad.data_ptr() if p.grad is not None else 0 for p in stepper.model.parameters()]


def test_without_settling_the_first_step_has_another_bucket_layout(single_rank: Dist) -> None:
    """The problem itself (if DDP ever stops rebuilding, settle_buckets is no longer needed)."""
    stepper, data = make_stepper()
    stepper.step(data.inputs[:8], data.targets[:8])
    first = grad_layout(stepper)
    stepper.step(data.inputs[8:16], data.targets[8:16])
    assert grad_layout(stepper) != first


def test_after_settling_every_step_has_the_same_layout(single_rank: Dist) -> None:
    stepper, data = make_stepper()
    settle_buckets(stepper, (data.inputs[:8], data.targets[:8]))
    layouts = []
    for begin in range(0, 32, 8):
        stepper.step(data.inputs[begin:begin + 8], data.targets[begin:begin + 8])
        layouts.append(grad_layout(stepper))
    assert all(layout == layouts[0] for layout in layouts) and 0 not in layouts[0]


def test_settling_changes_no_state(single_rank: Dist) -> None:
    stepper, data = make_stepper()
    stepper.step(data.inputs[:8], data.targets[:8])  # momentum buffers and BatchNorm statistics exist
    model = stepper.model
    before = {k: v.clone() for k, v in model.state_dict().items()}
    momentum = [stepper.optimizer.state[p]["momentum_buffer"].clone() for p in model.parameters()]
    rng = torch.get_rng_state()
    settle_buckets(stepper, (data.inputs[:8], data.targets[:8]))
    after = model.state_dict()
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before), "parameters and buffers unchanged"
    assert all(torch.equal(m, stepper.optimizer.state[p]["momentum_buffer"])
               for m, p in zip(momentum, model.parameters(), strict=True))
    assert torch.equal(rng, torch.get_rng_state()), "the dropout draws did not advance the RNG"
    assert all(p.grad is None for p in model.parameters()), "the throwaway gradients are gone"
