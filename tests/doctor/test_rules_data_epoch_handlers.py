"""DDP004 counts a ``set_epoch`` made in a lambda (an event handler a training engine calls each epoch, as
pytorch-ignite's ``add_event_handler``) or a handler that sets the sampler's ``epoch`` itself (seismic-deeplearning's
``data_loader.sampler.epoch = engine.state.epoch``, all ``set_epoch`` does), and still reports a shuffling sampler
when nothing calls it."""

from __future__ import annotations

from orchestrator.doctor import check_source

_SCRIPT = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
from ignite.engine import Engine, Events

dist.init_process_group("nccl")
ds = TensorDataset(torch.ones(8, 2))
sampler = DistributedSampler(ds)
loader = DataLoader(ds, sampler=sampler)
trainer = Engine(lambda engine, batch: None)
{handler}
trainer.run(loader, max_epochs=3)
"""


def codes(handler: str) -> list[str]:
    return [f.code for f in check_source(_SCRIPT.format(handler=handler), "t.py")]


def test_set_epoch_in_an_event_handler_lambda_counts() -> None:
    assert "DDP004" not in codes(
        "trainer.add_event_handler(Events.EPOCH_STARTED, lambda engine: sampler.set_epoch(engine.state.epoch))")


def test_a_lambda_that_calls_something_else_is_still_reported() -> None:
    assert "DDP004" in codes("trainer.add_event_handler(Events.EPOCH_STARTED, lambda engine: print(engine))")


_SETS_EPOCH = """
def update_sampler_epoch(data_loader, engine):
    data_loader.{attribute} = engine.state.epoch


trainer.add_event_handler(Events.EPOCH_STARTED, lambda engine: update_sampler_epoch(loader, engine))"""


def test_a_handler_that_sets_the_samplers_epoch_attribute_counts() -> None:
    assert "DDP004" not in codes(_SETS_EPOCH.format(attribute="sampler.epoch"))
    assert "DDP004" in codes(_SETS_EPOCH.format(attribute="epoch"))  # the loader's own attribute: not the sampler's
