"""DDP005 and progress bars: a tqdm bar's ``write`` prints on every rank even when the bar is made with ``disable=``
off rank 0 (tqdm's ``write`` is the class's, not the bar's); a bar that exists on rank 0 only, or values gathered
before they are printed, are not reported; a loss a step computed from a gathered count is only possible (the rank's
share of a global figure, or the figure itself). A writer tested in a longer condition (``if writer is not None and
step % 10 == 0``) is still the rank-0 object, and so is a bar made ``tqdm(...) if is_main else None`` (not one made
off rank 0). ``acc`` in a name is an accuracy, not ``accum_steps`` or ``accelerator``."""

from __future__ import annotations

import pytest

from orchestrator.doctor import check_source

_LOOP = """import torch
from accelerate import Accelerator
from tqdm import tqdm

def main():
    accelerator = Accelerator()
    model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)
    bar = {bar}
    for step, batch in enumerate(train_loader):
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        bar.update(1)
        {write}
"""
_DISABLED = "tqdm(range(100), disable=not accelerator.is_local_main_process)"


def lines(source: str) -> list[int]:
    return [f.line for f in check_source(source, "t.py") if f.code == "DDP005"]


def test_a_disabled_bars_write_of_the_loss_is_reported() -> None:
    source = _LOOP.format(bar=_DISABLED, write="bar.write(f'step {step} loss {loss.item()}')")
    assert lines(source) == [14]


def test_a_bar_that_exists_on_the_main_process_only_is_not_reported() -> None:
    source = _LOOP.format(bar="tqdm(range(100)) if accelerator.is_main_process else None",
                          write="if bar is not None:\n            bar.write(f'loss {loss.item()}')")
    assert lines(source) == []


def test_a_bars_write_of_a_gathered_loss_is_not_reported() -> None:
    source = _LOOP.format(bar=_DISABLED, write=(
        "losses = []\n        losses.append(accelerator.gather(loss))\n"
        "        bar.write(f'loss {torch.stack(losses).mean()}')"))
    assert lines(source) == []


def test_a_loss_computed_from_a_gathered_count_is_only_possible() -> None:
    source = _LOOP.format(bar=_DISABLED, write=(
        "tokens = accelerator.gather(batch['labels'].ne(-100).sum()).sum().item()\n"
        "        loss, metrics = train_step(batch, tokens)\n"
        "        bar.write(f'loss {metrics[\"loss\"]}')"))
    assert [(f.line, f.confidence) for f in check_source(source, "t.py") if f.code == "DDP005"] == [(16, "possible")]


def test_a_writer_tested_in_a_longer_condition_still_exists_on_rank_0_only() -> None:
    source = _LOOP.format(bar=_DISABLED, write=(
        "if writer is not None and step % 10 == 0:\n            writer.add_scalar('loss', loss.item(), step)"))
    assert lines(source) == []
    source = _LOOP.format(bar=_DISABLED, write=(
        "if step % 10 == 0:\n            writer.add_scalar('loss', loss.item(), step)"))
    assert lines(source) == [15]


@pytest.mark.parametrize(("bar", "found"), [
    ("tqdm(range(100)) if accelerator.is_main_process else None", []),
    ("tqdm(range(100)) if accelerator.process_index == 0 else None", []),
    ("None if accelerator.is_main_process else tqdm(range(100))", [14]),
    ("tqdm(range(100)) if step_count else None", [14]),
])
def test_a_bar_made_on_rank_0_only_shows_its_loss_there(bar: str, found: list[int]) -> None:
    source = _LOOP.format(bar=bar, write="bar.set_postfix({'loss': loss.item()})")
    assert lines(source) == found


def test_settings_spelled_like_accuracy_are_no_metric() -> None:
    for name in ("accum_steps", "accelerator.num_processes", "accumulation"):
        assert lines(_LOOP.format(bar=_DISABLED, write=f"print('settings', {name})")) == []
    assert lines(_LOOP.format(bar=_DISABLED, write="acc1 = loss.item()\n        print('top-1', acc1)")) == [15]


_REPORTED = """import torch
import torch.distributed as dist
from torch.utils.tensorboard import SummaryWriter
from reporting import Reporter

def main(args):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
    reporter = {made}
    for step, batch in enumerate(loader):
        loss = model(batch).sum()
        loss.backward()
        reporter.add_scalar('train/loss', loss.item())
"""


@pytest.mark.parametrize(("made", "found"), [
    ("Reporter(args, model, rank)", []),                  # the project's reporter is told its rank: it decides
    ("Reporter(args, model, local_rank=args.local_rank)", []),
    ("Reporter(args, model)", [14]),                      # told nothing: it writes on every rank
    ("SummaryWriter(f'runs/{rank}')", [14]),              # a library's writer per rank: every rank logs its own loss
])
def test_a_reporter_handed_the_rank_decides_where_it_writes(made: str, found: list[int]) -> None:
    assert lines(_REPORTED.format(made=made)) == found


def test_a_reporter_handed_the_rank_and_passed_to_the_training_function_still_decides() -> None:
    source = _REPORTED.format(made="Reporter(args, model, rank)").replace(
        "    for step, batch", "    train(model, reporter)\n\n\ndef train(model, reporter):\n    for step, batch")
    assert "def train(model, reporter)" in source
    assert lines(source) == []
    assert lines(source.replace("Reporter(args, model, rank)", "Reporter(args, model)")) == [18]
