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

from orchestrator import TensorData
from orchestrator.env.devices import CPU
from orchestrator.local.rankenv import free_port
from orchestrator.runtime.dist import Dist, StopVote, process_group
from orchestrator.runtime.loop import EpochPlan, FiniteWatch, Stepper, settle_buckets, train_epoch
from orchestrator.runtime.measures import Tally, accuracy
from orchestrator.runtime.schedule import Schedule
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


# --- train_epoch: accumulation, schedules, non-finite losses (one rank) ----------------------------

def epoch_run(single_rank: Dist, *, batch_size: int, grad_accum: int, inputs: torch.Tensor, targets: torch.Tensor,
              schedule: Schedule | None = None, skip: bool = False) -> tuple[nn.Module, Tally, Stepper]:
    from orchestrator.task.preempt import PreemptFlag

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    ddp = DistributedDataParallel(model, gradient_as_bucket_view=True)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    stepper = Stepper(ddp, optimizer, default_loss, schedule=schedule)
    settle_buckets(stepper, (inputs[:batch_size], targets[:batch_size]))
    n = int(inputs.shape[0])
    steps = n // batch_size
    plan = EpochPlan(epoch=0, num_steps=steps, batch_size=batch_size, real=n, grad_accum=grad_accum,
                     skip_nonfinite=skip)
    batches = iter([(inputs[i:i + batch_size], targets[i:i + batch_size]) for i in range(0, n, batch_size)])
    tally = Tally.zeros(single_rank.device, ["acc"])
    vote = StopVote(PreemptFlag(), single_rank)
    step, stopped = train_epoch(stepper, batches, plan, start_step=0, vote=vote, tally=tally,
                                metrics={"acc": accuracy}, ctx=single_rank)
    vote.drain()
    assert (step, stopped) == (steps, False) or skip is False
    return model, tally, stepper


def test_accumulating_micro_batches_equals_one_big_batch(single_rank: Dist) -> None:
    gen = torch.Generator().manual_seed(1)
    inputs, targets = torch.randn(32, 6, generator=gen), torch.randint(0, 3, (32,), generator=gen)
    big, big_tally, _ = epoch_run(single_rank, batch_size=8, grad_accum=1, inputs=inputs, targets=targets)
    small, small_tally, _ = epoch_run(single_rank, batch_size=4, grad_accum=2, inputs=inputs, targets=targets)
    for a, b in zip(big.parameters(), small.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert big_tally.count == small_tally.count == 32
    assert float(big_tally.sums[0]) == float(small_tally.sums[0])
    # a tail window of one micro-batch (5 micro-batches, accumulation 2) is averaged over one, not two
    tail, _, _ = epoch_run(single_rank, batch_size=4, grad_accum=2, inputs=inputs[:20], targets=targets[:20])
    ref, _, _ = epoch_run(single_rank, batch_size=8, grad_accum=1,
                          inputs=torch.cat([inputs[:16], inputs[16:20], inputs[16:20]]),
                          targets=torch.cat([targets[:16], targets[16:20], targets[16:20]]))
    for a, b in zip(tail.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_schedule_sets_each_optimizer_steps_lr(single_rank: Dist) -> None:
    gen = torch.Generator().manual_seed(2)
    inputs, targets = torch.randn(24, 6, generator=gen), torch.randint(0, 3, (24,), generator=gen)
    schedule = Schedule("cosine", total=3, warmup=1)
    _, _, stepper = epoch_run(single_rank, batch_size=4, grad_accum=2, inputs=inputs, targets=targets,
                              schedule=schedule)
    group = stepper.optimizer.param_groups[0]
    assert group["initial_lr"] == 0.1 and group["lr"] == pytest.approx(0.1 * schedule.factor(2))


def test_a_non_finite_batch_is_skipped_on_request_and_stops_otherwise(single_rank: Dist) -> None:
    gen = torch.Generator().manual_seed(3)
    inputs, targets = torch.randn(16, 6, generator=gen), torch.randint(0, 3, (16,), generator=gen)
    poisoned = inputs.clone()
    poisoned[9] = float("nan")  # the 3rd micro-batch (window 2 of 2 with accumulation 2)
    skipped, tally, _ = epoch_run(single_rank, batch_size=4, grad_accum=2, inputs=poisoned, targets=targets,
                                  skip=True)
    assert tally.skipped == 1 and tally.count == 12 and torch.isfinite(tally.loss_sum)
    reference, _, _ = epoch_run(single_rank, batch_size=4, grad_accum=2, inputs=inputs[:8], targets=targets[:8])
    for a, b in zip(skipped.parameters(), reference.parameters(), strict=True):
        assert torch.equal(a, b), "the poisoned window changed nothing"
    watch = FiniteWatch(torch.device("cpu"))
    assert watch.push(torch.tensor(1.0), 3) is None and watch.push(torch.tensor(float("inf")), 4) == 4
