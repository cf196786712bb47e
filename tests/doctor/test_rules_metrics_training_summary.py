"""DDP013 for a training summary: the epoch's training loss, summed over the rank's own batches of a sharded loader
and shown by rank 0 after the batch loop as the epoch's, with no reduction (JUDGING.md's metric policy). A value shown
inside the batch loop (a step's, a window's) is progress, not a summary; reduced, or over a loader every rank reads
whole, or printed on every rank inside the epoch loop (DDP005's), it is not this finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file
from orchestrator.doctor.confidence import TRAINING_SUMMARY

_HEAD = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

dist.init_process_group("nccl")
rank = dist.get_rank()
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sampler = DistributedSampler(range(10))
loader = DataLoader(range(10){sampler})
"""

_INLINE = """
for epoch in range(3):
    sampler.set_epoch(epoch)
    epoch_loss = 0.0
    for step, x in enumerate(loader):
        loss = model(x).sum()
        loss.backward()
        opt.step()
        epoch_loss += loss.item()
        if rank == 0 and step % 100 == 0:
            print("step", step, "loss", epoch_loss / (step + 1))
{reduce}{guard}{indent}print("epoch", epoch, "train loss", epoch_loss / len(loader))
"""

_SHARDED = ", sampler=sampler"


def _ddp013(tmp_path: Path, script: str) -> list[tuple[int, frozenset[str], str]]:
    (tmp_path / "train.py").write_text(script)
    return [(f.line, f.marks, f.confidence) for f in check_file(tmp_path / "train.py") if f.code == "DDP013"]


def _line(script: str, text: str) -> int:
    return next(i for i, line in enumerate(script.splitlines(), 1) if text in line)


@pytest.mark.parametrize(("sampler", "reduce", "guard", "reported"), [
    (_SHARDED, "", "    if rank == 0:\n", True),
    (_SHARDED, "    t = torch.tensor(epoch_loss)\n    dist.all_reduce(t)\n    epoch_loss = t.item()\n",
     "    if rank == 0:\n", False),
    ("", "", "    if rank == 0:\n", False),  # every rank trains on the whole set: its sum is the epoch's
    (_SHARDED, "", "", False),  # every rank prints in the epoch loop: DDP005's, not a rank-0 summary
])
def test_rank_zeros_epoch_loss_over_its_own_batches(tmp_path: Path, sampler: str, reduce: str, guard: str,
                                                    reported: bool) -> None:
    script = _HEAD.format(sampler=sampler) + _INLINE.format(reduce=reduce, guard=guard,
                                                            indent="        " if guard else "    ")
    found = _ddp013(tmp_path, script)
    shown = _line(script, 'print("epoch"')
    assert [line for line, _, _ in found] == ([shown] if reported else [])
    if reported:  # a variant of DDP013 measured sound on its own (confidence.SOUND_VARIANTS): shown by default
        assert found == [(shown, frozenset({TRAINING_SUMMARY}), "likely")]
    assert _line(script, 'print("step"') not in [line for line, _, _ in found]  # a window's progress line


_FUNCTION = """
def train_one_epoch(model, data):
    total, steps = 0.0, 0
    for x in data:
        loss = model(x).sum()
        loss.backward()
        opt.step()
        steps += 1
        total += loss.item()
    return {returned}


for epoch in range(3):
    sampler.set_epoch(epoch)
    train_loss = train_one_epoch(model, loader)
    if rank == 0:
        print(f"epoch {{epoch}} train_loss {{train_loss}}")
"""


@pytest.mark.parametrize(("returned", "reported"), [
    ("total / steps", True),
    ("loss.item()", False),  # the last batch's loss: a progress value, not the epoch's sum
])
def test_an_epoch_function_returning_its_own_sum(tmp_path: Path, returned: str, reported: bool) -> None:
    script = _HEAD.format(sampler=_SHARDED) + _FUNCTION.format(returned=returned)
    found = _ddp013(tmp_path, script)
    assert [line for line, _, _ in found] == ([_line(script, 'print(f"epoch')] if reported else [])


_AFTER = """
for epoch in range(3):
    sampler.set_epoch(epoch)
    epoch_loss = 0.0
    for x in loader:
        loss = model(x).sum()
        loss.backward()
        opt.step()
        epoch_loss += loss.item()
{between}    if rank == 0:
        {shown}
"""


@pytest.mark.parametrize(("between", "shown", "reported"), [
    ("    epoch_loss = epoch_loss / len(loader)\n", "print('train loss', epoch_loss)", True),  # still the sum
    ("    epoch_loss = 0.0\n", "print('train loss', epoch_loss)", False),  # a new value, not the loop's sum
    ("", "bar.set_description(f'loss {epoch_loss / len(loader)}')", False),  # a progress bar's text
    ("", "writer.add_scalar('train/loss', epoch_loss / len(loader), epoch)", True),
])
def test_what_rank_zero_shows_after_the_batch_loop(tmp_path: Path, between: str, shown: str, reported: bool) -> None:
    script = _HEAD.format(sampler=_SHARDED) + "bar = tqdm(range(3))\nwriter = SummaryWriter()\n" + _AFTER.format(
        between=between, shown=shown)
    found = _ddp013(tmp_path, script)
    assert [line for line, _, _ in found] == ([_line(script, shown)] if reported else [])
